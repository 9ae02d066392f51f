"""Stream one PostgreSQL table into a Delta table with Spark: a parallel snapshot, then every change.

    python examples/spark_postgres_to_delta.py --dbname inventory --table public.customers --key id \
        --delta /lake/customers --checkpoint /lake/_checkpoints/customers [--available-now]

The database password, if any, comes from the CDC_DATABASE_PASSWORD environment variable.
Restart it with the same --checkpoint after any stop or crash: it resumes where Spark last
committed, and the Delta table never gets a change twice.
"""

from __future__ import annotations

import argparse
import os
import sys

from pyspark.sql import SparkSession

import cdc_spark


def main(argv: list[str] | None = None) -> None:
    """Parse the arguments and run the stream until stopped (or, with --available-now, up to where the log was at the start)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="localhost")
    p.add_argument("--port", default="5432")
    p.add_argument("--user", default="postgres")
    p.add_argument("--dbname", required=True)
    p.add_argument("--table", required=True, help="schema.table")
    p.add_argument("--key", required=True, action="append", help="key column (repeat for composite keys)")
    p.add_argument("--delta", required=True, help="path of the Delta table")
    p.add_argument("--checkpoint", required=True, help="Spark checkpoint directory (the offset store)")
    p.add_argument("--topic-prefix", default="cdc")
    p.add_argument("--slot", default="debezium")
    p.add_argument("--available-now", action="store_true",
                   help="stop at the log position current when the job starts (Trigger.AvailableNow)")
    p.add_argument("--master", default="local[2]")
    args = p.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master(args.master).appName("cdc-postgres-to-delta")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    cdc_spark.register(spark)
    options = {
        "connector": "postgres", "database.hostname": args.host, "database.port": args.port,
        "database.user": args.user, "database.dbname": args.dbname, "topic.prefix": args.topic_prefix,
        "slot.name": args.slot, "table": args.table, "poll.interval.ms": "100",
    }
    if os.environ.get("CDC_DATABASE_PASSWORD"):
        options["database.password"] = os.environ["CDC_DATABASE_PASSWORD"]
    changes = spark.readStream.format("cdc").options(**options).load()
    writer = (changes.writeStream
              .foreachBatch(lambda batch, _id: cdc_spark.apply_changes(batch, args.delta, keys=args.key))
              .option("checkpointLocation", args.checkpoint))
    writer = writer.trigger(availableNow=True) if args.available_now else writer.trigger(processingTime="500 milliseconds")
    query = writer.start()
    try:
        query.awaitTermination()
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
