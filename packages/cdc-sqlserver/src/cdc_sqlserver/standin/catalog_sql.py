"""The PostgreSQL objects that stand in for SQL Server's ``sys`` catalog and CDC metadata."""

from __future__ import annotations

#: SQL Server's system type ids (sys.types) for the types the stand-in can hold.
TYPES = {
    "bit": 104, "tinyint": 48, "smallint": 52, "int": 56, "bigint": 127, "real": 59, "float": 62,
    "decimal": 106, "numeric": 108, "money": 60, "smallmoney": 122, "char": 175, "varchar": 167,
    "nchar": 239, "nvarchar": 231, "text": 35, "ntext": 99, "date": 40, "time": 41, "datetime": 61,
    "datetime2": 42, "smalldatetime": 58, "datetimeoffset": 43, "uniqueidentifier": 36, "binary": 173,
    "varbinary": 165, "xml": 241, "image": 34, "timestamp": 189, "hierarchyid": 128, "geometry": 129,
    "geography": 130, "sql_variant": 98,
}

#: SQL Server's system CLR types: their own user_type_id, system_type_id 240 (sys.types), as on SQL Server.
CLR_TYPES = frozenset({"hierarchyid", "geometry", "geography"})

#: Objects every stand-in database has (SQL Server's ``sys`` schema exists before CDC is enabled).
SERVER_OBJECTS = """
CREATE SCHEMA IF NOT EXISTS sys;
CREATE SCHEMA IF NOT EXISTS standin;
CREATE TABLE standin.column_types (object_id int, column_name text, type_name text, max_length int,
    precision int, scale int, is_identity int DEFAULT 0, default_definition text,
    PRIMARY KEY (object_id, column_name));
CREATE TABLE sys.types (user_type_id int PRIMARY KEY, system_type_id int, name text);
CREATE TABLE standin.alias_types (name text PRIMARY KEY, base text NOT NULL);
CREATE TABLE standin.tracked (source_object_id int PRIMARY KEY);
CREATE VIEW sys.schemas AS SELECT oid::int AS schema_id, nspname::text AS name FROM pg_namespace;
CREATE VIEW sys.tables AS
    SELECT c.oid::int AS object_id, c.relname::text AS name, c.relnamespace::int AS schema_id,
           CASE WHEN n.nspname IN ('cdc', 'sys', 'standin', 'information_schema') OR n.nspname LIKE 'pg\\_%'
                THEN 1 ELSE 0 END AS is_ms_shipped,
           CASE WHEN to_regclass('cdc.change_tables') IS NOT NULL AND EXISTS (
                SELECT 1 FROM standin.tracked t WHERE t.source_object_id = c.oid::int) THEN 1 ELSE 0 END
               AS is_tracked_by_cdc
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p');
CREATE VIEW sys.columns AS
    SELECT a.attrelid::int AS object_id, a.attnum::int AS column_id, a.attname::text AS name,
           ty.user_type_id, ty.system_type_id, ct.max_length, ct.precision, ct.scale,
           CASE WHEN a.attnotnull THEN 0 ELSE 1 END AS is_nullable, ct.is_identity, 0 AS is_computed
    FROM pg_attribute a
    JOIN standin.column_types ct ON ct.object_id = a.attrelid::int AND ct.column_name = a.attname::text
    JOIN sys.types ty ON ty.name = ct.type_name
    WHERE a.attnum > 0 AND NOT a.attisdropped;
CREATE VIEW sys.default_constraints AS
    SELECT ct.object_id AS parent_object_id, a.attnum::int AS parent_column_id, ct.default_definition AS definition
    FROM standin.column_types ct
    JOIN pg_attribute a ON a.attrelid = ct.object_id::oid AND a.attname = ct.column_name
    WHERE ct.default_definition IS NOT NULL;
CREATE VIEW sys.indexes AS
    SELECT i.indrelid::int AS object_id, i.indexrelid::int AS index_id, c.relname::text AS name,
           CASE WHEN i.indisprimary THEN 1 ELSE 0 END AS is_primary_key,
           CASE WHEN i.indisunique THEN 1 ELSE 0 END AS is_unique,
           CASE WHEN i.indisclustered THEN 1 ELSE 2 END AS type
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid;
CREATE VIEW sys.index_columns AS
    SELECT i.indrelid::int AS object_id, i.indexrelid::int AS index_id, k.ord::int AS key_ordinal,
           k.attnum::int AS column_id
    FROM pg_index i, unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord);
CREATE VIEW sys.databases AS
    SELECT d.oid::int AS database_id, d.datname::text AS name,
           CASE WHEN d.datname = current_database() AND to_regclass('cdc.change_tables') IS NOT NULL
                THEN 1 ELSE 0 END AS is_cdc_enabled
    FROM pg_database d;
CREATE FUNCTION public.db_name() RETURNS text LANGUAGE sql STABLE AS $$ SELECT current_database()::text $$;
CREATE FUNCTION public.sysutcdatetime() RETURNS timestamp LANGUAGE sql STABLE
    AS $$ SELECT (clock_timestamp() AT TIME ZONE 'UTC') $$;
CREATE FUNCTION public.object_name(id int) RETURNS text LANGUAGE sql STABLE
    AS $$ SELECT relname::text FROM pg_class WHERE oid = id::oid $$;
CREATE FUNCTION public.object_schema_name(id int) RETURNS text LANGUAGE sql STABLE
    AS $$ SELECT n.nspname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = id::oid $$;
CREATE TABLE standin.agent (running boolean NOT NULL DEFAULT false);
INSERT INTO standin.agent VALUES (false);
CREATE VIEW sys.dm_server_services AS
    SELECT 'SQL Server Agent (MSSQLSERVER)'::text AS servicename, CASE WHEN running THEN 4 ELSE 1 END AS status,
           CASE WHEN running THEN 'Running' ELSE 'Stopped' END AS status_desc FROM standin.agent
    UNION ALL SELECT 'SQL Server (MSSQLSERVER)', 4, 'Running';
GRANT USAGE ON SCHEMA sys TO PUBLIC;
GRANT SELECT ON ALL TABLES IN SCHEMA sys TO PUBLIC;
-- T-SQL's binary literals (0x00) arrive as PostgreSQL bit strings (x'00'): compare them with bytea.
CREATE FUNCTION standin.bit_bytes(b bit varying) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(decode(string_agg(lpad(to_hex(substring(b FROM i * 8 + 1 FOR 8)::bit(8)::int), 2, '0'), ''
                                      ORDER BY i), 'hex'), ''::bytea)
    FROM generate_series(0, length(b) / 8 - 1) AS i $$;
CREATE FUNCTION standin.bytea_ne_bit(a bytea, b bit varying) RETURNS boolean LANGUAGE sql IMMUTABLE
    AS $$ SELECT a <> standin.bit_bytes(b) $$;
CREATE FUNCTION standin.bytea_eq_bit(a bytea, b bit varying) RETURNS boolean LANGUAGE sql IMMUTABLE
    AS $$ SELECT a = standin.bit_bytes(b) $$;
CREATE OPERATOR public.<> (LEFTARG = bytea, RIGHTARG = bit varying, FUNCTION = standin.bytea_ne_bit);
CREATE OPERATOR public.= (LEFTARG = bytea, RIGHTARG = bit varying, FUNCTION = standin.bytea_eq_bit);
-- BIT columns are booleans here; T-SQL compares them with 0 and 1 (WHERE soft_deleted = 0).
CREATE FUNCTION standin.bool_eq_int(a boolean, b integer) RETURNS boolean LANGUAGE sql IMMUTABLE
    AS $$ SELECT a::int = b $$;
CREATE FUNCTION standin.bool_ne_int(a boolean, b integer) RETURNS boolean LANGUAGE sql IMMUTABLE
    AS $$ SELECT a::int <> b $$;
CREATE OPERATOR public.= (LEFTARG = boolean, RIGHTARG = integer, FUNCTION = standin.bool_eq_int);
CREATE OPERATOR public.<> (LEFTARG = boolean, RIGHTARG = integer, FUNCTION = standin.bool_ne_int);
-- SQL Server compares binary values byte by byte; MAX over binary(10) LSNs.
CREATE FUNCTION standin.bytea_larger(a bytea, b bytea) RETURNS bytea LANGUAGE sql IMMUTABLE
    AS $$ SELECT CASE WHEN a IS NULL OR b > a THEN b ELSE a END $$;
CREATE AGGREGATE public.max(bytea) (SFUNC = standin.bytea_larger, STYPE = bytea);
CREATE FUNCTION standin.bytea_smaller(a bytea, b bytea) RETURNS bytea LANGUAGE sql IMMUTABLE
    AS $$ SELECT CASE WHEN a IS NULL OR b < a THEN b ELSE a END $$;
CREATE AGGREGATE public.min(bytea) (SFUNC = standin.bytea_smaller, STYPE = bytea);
CREATE FUNCTION public.db_id() RETURNS int LANGUAGE sql STABLE
    AS $$ SELECT oid::int FROM pg_database WHERE datname = current_database() $$;
-- sys.dm_db_log_stats: the end of the log is PostgreSQL's WAL insert position, in the form the stand-in's LSNs
-- take from WAL positions (slot 0): every commit record written so far ends at or below it, a later one above.
CREATE FUNCTION sys.dm_db_log_stats(dbid int) RETURNS TABLE (database_id int, log_end_lsn varchar(24))
    LANGUAGE sql VOLATILE AS $$
    SELECT dbid, lpad(upper(split_part(w.l, '/', 1)), 8, '0') || ':' || lpad(upper(split_part(w.l, '/', 2)), 8, '0')
           || ':0000' FROM (SELECT pg_current_wal_insert_lsn()::text AS l) w $$;
CREATE FUNCTION public.suser_sname() RETURNS text LANGUAGE sql STABLE AS $$ SELECT current_user::text $$;
"""

#: What ``sys.sp_cdc_enable_db`` creates: the ``cdc`` schema, its metadata tables and the LSN functions.
CDC_OBJECTS = """
CREATE SCHEMA cdc;
CREATE TABLE cdc.change_tables (object_id int PRIMARY KEY, version int DEFAULT 0, source_object_id int,
    capture_instance text UNIQUE, start_lsn bytea, end_lsn bytea, supports_net_changes int DEFAULT 0,
    has_drop_pending int, role_name text, index_name text, filegroup_name text,
    create_date timestamp DEFAULT (clock_timestamp() AT TIME ZONE 'UTC'), partition_switch int DEFAULT 0);
CREATE TABLE cdc.captured_columns (object_id int, column_name text, column_id int, column_type text,
    column_ordinal int, is_computed int DEFAULT 0);
CREATE TABLE cdc.lsn_time_mapping (start_lsn bytea PRIMARY KEY, tran_begin_time timestamp,
    tran_end_time timestamp, tran_id bytea, tran_begin_lsn bytea);
GRANT USAGE ON SCHEMA cdc TO PUBLIC;
GRANT SELECT ON cdc.change_tables, cdc.captured_columns, cdc.lsn_time_mapping TO PUBLIC;
CREATE FUNCTION sys.fn_cdc_get_max_lsn() RETURNS bytea LANGUAGE sql STABLE
    AS $$ SELECT start_lsn FROM cdc.lsn_time_mapping ORDER BY start_lsn DESC LIMIT 1 $$;
CREATE FUNCTION sys.fn_cdc_get_min_lsn(capture_instance text) RETURNS bytea LANGUAGE sql STABLE
    AS $$ SELECT coalesce((SELECT ct.start_lsn FROM cdc.change_tables ct
                           WHERE ct.capture_instance = fn_cdc_get_min_lsn.capture_instance),
                          '\\x00000000000000000000'::bytea) $$;
CREATE FUNCTION sys.fn_cdc_map_lsn_to_time(lsn bytea) RETURNS timestamp LANGUAGE sql STABLE
    AS $$ SELECT tran_end_time FROM cdc.lsn_time_mapping WHERE start_lsn = lsn $$;
CREATE FUNCTION sys.fn_cdc_increment_lsn(lsn bytea) RETURNS bytea LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    out bytea := lsn;
    i int := length(lsn) - 1;
BEGIN
    WHILE i >= 0 LOOP
        IF get_byte(out, i) < 255 THEN
            RETURN set_byte(out, i, get_byte(out, i) + 1);
        END IF;
        out := set_byte(out, i, 0);
        i := i - 1;
    END LOOP;
    RETURN out;
END $$;
CREATE FUNCTION sys.sp_cdc_help_change_data_capture()
    RETURNS TABLE (source_schema text, source_table text, capture_instance text, object_id int,
                   source_object_id int, start_lsn bytea, end_lsn bytea, supports_net_changes int,
                   has_drop_pending int, role_name text, index_name text, filegroup_name text,
                   create_date timestamp, index_column_list text, captured_column_list text)
    LANGUAGE sql STABLE AS $$
    SELECT object_schema_name(ct.source_object_id), object_name(ct.source_object_id), ct.capture_instance,
           ct.object_id, ct.source_object_id, ct.start_lsn, ct.end_lsn, ct.supports_net_changes,
           ct.has_drop_pending, ct.role_name, ct.index_name, ct.filegroup_name, ct.create_date, NULL::text,
           (SELECT string_agg(quote_ident(cc.column_name), ', ' ORDER BY cc.column_ordinal)
              FROM cdc.captured_columns cc WHERE cc.object_id = ct.object_id)
    FROM cdc.change_tables ct
    WHERE has_table_privilege(format('cdc.%I', ct.capture_instance || '_CT'), 'SELECT')
    ORDER BY ct.capture_instance
$$;
"""


def types_rows() -> list[tuple[int, int, str]]:
    """Rows of ``sys.types``."""
    return [(tid, 240 if name in CLR_TYPES else tid, name) for name, tid in TYPES.items()]
