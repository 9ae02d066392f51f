"""The PostgreSQL objects that stand in for Db2's catalog views and SQL Replication's ASN control objects.

Db2 folds unquoted names to upper case and PostgreSQL to lower case, so the fixed objects the
connector names unquoted (``SYSCAT.COLUMNS``, ``ASNCDC.IBMSNAP_REGISTER``) are created unquoted
(lower case) here, while the objects it names quoted, from catalog values (source tables and the CD
tables of ``"ASNCDC"``), keep their upper-case names.
"""

from __future__ import annotations

OBJECTS = r"""
CREATE SCHEMA IF NOT EXISTS standin;
CREATE SCHEMA IF NOT EXISTS sysibm;
CREATE SCHEMA IF NOT EXISTS syscat;
CREATE SCHEMA IF NOT EXISTS asncdc;
CREATE SCHEMA IF NOT EXISTS "ASNCDC";
CREATE TABLE sysibm.sysdummy1 (ibmreqd char(1));
INSERT INTO sysibm.sysdummy1 VALUES ('Y');
-- The Db2 type of each source column (PostgreSQL has no GRAPHIC, DECFLOAT, FOR BIT DATA...).
CREATE TABLE standin.column_types (tabschema text, tabname text, colname text, typename text, length int,
    scale int, codepage int, "default" text, PRIMARY KEY (tabschema, tabname, colname));
CREATE VIEW syscat.tables AS
    SELECT n.nspname::varchar AS tabschema, c.relname::varchar AS tabname, 'T'::char(1) AS type,
           0 AS tbspaceid, c.oid::int AS tableid
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'standin');
CREATE VIEW syscat.columns AS
    SELECT n.nspname::varchar AS tabschema, c.relname::varchar AS tabname, a.attname::varchar AS colname,
           (a.attnum - 1)::smallint AS colno,
           COALESCE(ct.typename, upper(format_type(a.atttypid, NULL))) AS typename,
           COALESCE(ct.length, 0) AS length, COALESCE(ct.scale, 0)::smallint AS scale,
           CASE WHEN a.attnotnull THEN 'N' ELSE 'Y' END::char(1) AS nulls,
           (SELECT k.ord::smallint FROM pg_index i, unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
             WHERE i.indrelid = c.oid AND i.indisprimary AND k.attnum = a.attnum) AS keyseq,
           COALESCE(ct.codepage, 1208) AS codepage, ct."default"::varchar AS "DEFAULT"
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN standin.column_types ct ON ct.tabschema = n.nspname AND ct.tabname = c.relname
         AND ct.colname = a.attname
    WHERE a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'p')
      AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'standin');

CREATE TABLE asncdc.ibmsnap_register (
    global_record char(1) NOT NULL DEFAULT 'N', source_owner varchar(128) NOT NULL,
    source_table varchar(128) NOT NULL, source_view_qual smallint NOT NULL DEFAULT 0,
    source_type char(1) NOT NULL DEFAULT 'L', source_condensed char(1) NOT NULL DEFAULT 'N',
    source_complete char(1) NOT NULL DEFAULT 'Y', cd_owner varchar(128), cd_table varchar(128),
    phys_change_owner varchar(128), phys_change_table varchar(128), cd_old_synchpoint bytea,
    cd_new_synchpoint bytea, disable_refresh smallint NOT NULL DEFAULT 0, ccd_owner varchar(128),
    ccd_table varchar(128), ccd_old_synchpoint bytea, synchpoint bytea, synchtime timestamp,
    chg_upd_to_del_ins char(1) NOT NULL DEFAULT 'Y', chgonly char(1) NOT NULL DEFAULT 'N',
    recapture char(1) NOT NULL DEFAULT 'Y', state char(1) NOT NULL DEFAULT 'A', state_info char(8),
    PRIMARY KEY (source_owner, source_table, source_view_qual));
-- The global record (no source owner): the capture program's own synchpoint.
INSERT INTO asncdc.ibmsnap_register (global_record, source_owner, source_table, synchpoint, synchtime)
    VALUES ('Y', '', 'IBMSNAP_REGISTER', '\x00000000000000000000000000000000'::bytea, now() AT TIME ZONE 'UTC');
CREATE TABLE asncdc.ibmsnap_uow (ibmsnap_uowid bytea NOT NULL, ibmsnap_commitseq bytea NOT NULL PRIMARY KEY,
    ibmsnap_logmarker timestamp NOT NULL, ibmsnap_authtkn varchar(30) NOT NULL DEFAULT '',
    ibmsnap_authid varchar(128) NOT NULL DEFAULT '', ibmsnap_rejcode char(1) NOT NULL DEFAULT '0',
    ibmsnap_applyqual char(18) NOT NULL DEFAULT '');
CREATE TABLE asncdc.ibmsnap_capparms (retention_limit int DEFAULT 10080, lag_limit int DEFAULT 10080,
    commit_interval int DEFAULT 30, prune_interval int DEFAULT 300, trace_limit int DEFAULT 10080,
    monitor_limit int DEFAULT 10080, monitor_interval int DEFAULT 300, memory_limit smallint DEFAULT 32,
    sleep_interval smallint DEFAULT 5, autoprune char(1) DEFAULT 'Y', term char(1) DEFAULT 'Y',
    autostop char(1) DEFAULT 'N', logreuse char(1) DEFAULT 'N', logstdout char(1) DEFAULT 'N',
    signal_limit int DEFAULT 10080, capture_path varchar(1040), arch_level char(4) DEFAULT '1021',
    compatibility char(4) DEFAULT '1021');
INSERT INTO asncdc.ibmsnap_capparms DEFAULT VALUES;
-- SQL Replication's signal table (Debezium's asncdctables.sql: DATA CAPTURE CHANGES, not registered); the agent
-- marks a USER signal complete ('C', SIGNAL_LSN the commit sequence of the inserting transaction) when it reads
-- that transaction's commit, as asncap does.
CREATE TABLE asncdc.ibmsnap_signal (signal_time timestamp NOT NULL DEFAULT clock_timestamp(),
    signal_type varchar(30) NOT NULL, signal_subtype varchar(30), signal_input_in varchar(500),
    signal_state char(1) NOT NULL, signal_lsn bytea);
CREATE TABLE asncdc.ibmsnap_pruncntl (target_server char(18) NOT NULL, target_owner varchar(128) NOT NULL,
    target_table varchar(128) NOT NULL, synchtime timestamp, synchpoint bytea, source_owner varchar(128) NOT NULL,
    source_table varchar(128) NOT NULL, source_view_qual smallint NOT NULL DEFAULT 0, apply_qual char(18) NOT NULL,
    set_name char(18) NOT NULL, cntl_server char(18) NOT NULL, target_structure smallint NOT NULL DEFAULT 8,
    cntl_alias char(8), phys_change_owner varchar(128), phys_change_table varchar(128), map_id varchar(10) NOT NULL);
-- The capture program's state, kept by the stand-in's agent; and where each table's capture starts.
CREATE TABLE standin.asncap (running boolean NOT NULL DEFAULT false, reinits int NOT NULL DEFAULT 0);
INSERT INTO standin.asncap VALUES (false, 0);
CREATE TABLE standin.capture_start (source_owner text, source_table text, start_lsn bytea,
    PRIMARY KEY (source_owner, source_table));

-- Db2's TIMESTAMP(7..12): PostgreSQL's timestamp keeps 6 fractional digits, so such a column holds Db2's string
-- form ('yyyy-mm-dd-hh.mm.ss.nnnnnnnnn', exactly p digits) in a text-like type of its own, whose OID tells the
-- connection layer (standin.dbapi) to give its values as ibm_db does: datetimes, in microseconds. A trigger per
-- table (standin.db2_values) brings what is written to that form, as Db2 stores a value at the column's
-- precision (extra digits cut, missing ones zero); VARCHAR(col) (standin.db2_varchar) gives the string.
CREATE TYPE standin.db2_timestamp;
CREATE FUNCTION standin.db2_timestamp_in(cstring) RETURNS standin.db2_timestamp LANGUAGE internal IMMUTABLE STRICT
    AS 'textin';
CREATE FUNCTION standin.db2_timestamp_out(standin.db2_timestamp) RETURNS cstring LANGUAGE internal IMMUTABLE STRICT
    AS 'textout';
CREATE TYPE standin.db2_timestamp (INPUT = standin.db2_timestamp_in, OUTPUT = standin.db2_timestamp_out,
    LIKE = text, COLLATABLE = true);
CREATE CAST (standin.db2_timestamp AS text) WITHOUT FUNCTION AS IMPLICIT;
CREATE CAST (text AS standin.db2_timestamp) WITHOUT FUNCTION AS ASSIGNMENT;
CREATE FUNCTION standin.db2_timestamp_text(v text, p int) RETURNS text LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    m text[] := regexp_match(v, '^\s*(\d{4}-\d{2}-\d{2})(?:[-T ](\d{2})[.:](\d{2})[.:](\d{2})(?:[.,](\d{1,12}))?)?\s*$');
BEGIN
    IF m IS NULL OR m[1]::date IS NULL THEN
        RAISE EXCEPTION 'The string representation of a datetime value is out of range: %', v USING ERRCODE = '22007';
    END IF;
    RETURN m[1] || '-' || coalesce(m[2], '00') || '.' || coalesce(m[3], '00') || '.' || coalesce(m[4], '00')
        || CASE WHEN p > 0 THEN '.' || rpad(left(coalesce(m[5], ''), p), p, '0') ELSE '' END;
END $$;
-- DECFLOAT(16) holds 16 significant digits, DECFLOAT(34) 34: Db2 rounds what is written to them (its default
-- CURRENT DECFLOAT ROUNDING MODE, ROUND_HALF_EVEN); PostgreSQL's numeric would keep every digit.
CREATE FUNCTION standin.decfloat_round(v numeric, digits int) RETURNS numeric LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    s int;
    scaled numeric;
    t numeric;
BEGIN
    IF v = 0 OR v::text IN ('NaN', 'Infinity', '-Infinity') THEN
        RETURN v;
    END IF;
    s := digits - (floor(log(abs(v))) + 1)::int;
    scaled := v * power(10::numeric, s);
    t := trunc(scaled);
    IF scaled = t THEN
        RETURN v;  -- no more digits than it holds: kept as written (a DECFLOAT keeps its exponent)
    ELSIF abs(scaled - t) = 0.5 THEN
        scaled := CASE WHEN mod(t, 2) = 0 THEN t ELSE t + sign(v) END;
    ELSE
        scaled := round(scaled);
    END IF;
    RETURN trim_scale(scaled * power(10::numeric, -s));
END $$;
-- The trigger's arguments, three per column: its name, T (a TIMESTAMP(7..12): its precision follows) or D (a
-- DECFLOAT: its digits follow).
CREATE FUNCTION standin.db2_values() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r jsonb := to_jsonb(NEW);
    fix jsonb := '{}';
    i int := 0;
BEGIN
    WHILE i < TG_NARGS LOOP
        IF r ->> TG_ARGV[i] IS NOT NULL THEN
            fix := fix || jsonb_build_object(TG_ARGV[i], CASE TG_ARGV[i + 1]
                WHEN 'T' THEN to_jsonb(standin.db2_timestamp_text(r ->> TG_ARGV[i], TG_ARGV[i + 2]::int))
                ELSE to_jsonb(standin.decfloat_round((r ->> TG_ARGV[i])::numeric, TG_ARGV[i + 2]::int)) END);
        END IF;
        i := i + 3;
    END LOOP;
    NEW := jsonb_populate_record(NEW, fix);
    RETURN NEW;
END $$;
CREATE FUNCTION standin.db2_timestamp_of(v timestamp) RETURNS standin.db2_timestamp LANGUAGE sql IMMUTABLE STRICT
    AS $$ SELECT to_char(v, 'YYYY-MM-DD-HH24.MI.SS.US')::standin.db2_timestamp $$;
CREATE CAST (timestamp AS standin.db2_timestamp) WITH FUNCTION standin.db2_timestamp_of(timestamp) AS ASSIGNMENT;
-- A datetime (a driver's parameter) compares with such a column as Db2 compares a TIMESTAMP(6) with a
-- TIMESTAMP(9): both at 12 digits, the datetime's missing ones zero. (Indexes and ORDER BY take text's order,
-- the same for values of one column, which all have its p digits.)
DO $$
DECLARE
    op text;
BEGIN
    FOREACH op IN ARRAY ARRAY['<', '<=', '=', '>=', '>', '<>'] LOOP
        EXECUTE format('CREATE FUNCTION standin.db2_timestamp_cmp_%s(a standin.db2_timestamp, b timestamp) '
                       'RETURNS boolean LANGUAGE sql IMMUTABLE STRICT AS $f$ SELECT '
                       'standin.db2_timestamp_text(a::text, 12) %s '
                       'standin.db2_timestamp_text(to_char(b, ''YYYY-MM-DD-HH24.MI.SS.US''), 12) $f$',
                       md5(op), op);
        EXECUTE format('CREATE OPERATOR %s (LEFTARG = standin.db2_timestamp, RIGHTARG = timestamp, '
                       'FUNCTION = standin.db2_timestamp_cmp_%s)', op, md5(op));
        -- Two such values (a string parameter is taken as one): at 12 digits too.
        EXECUTE format('CREATE FUNCTION standin.db2_timestamp_cmp2_%s(a standin.db2_timestamp, '
                       'b standin.db2_timestamp) RETURNS boolean LANGUAGE sql IMMUTABLE STRICT AS $f$ SELECT '
                       'standin.db2_timestamp_text(a::text, 12) %s standin.db2_timestamp_text(b::text, 12) $f$',
                       md5(op), op);
        EXECUTE format('CREATE OPERATOR %s (LEFTARG = standin.db2_timestamp, RIGHTARG = standin.db2_timestamp, '
                       'FUNCTION = standin.db2_timestamp_cmp2_%s)', op, md5(op));
    END LOOP;
END $$;
CREATE FUNCTION standin.db2_varchar(v standin.db2_timestamp) RETURNS varchar LANGUAGE sql IMMUTABLE STRICT
    AS $$ SELECT v::text $$;

-- Db2 compares VARCHAR FOR BIT DATA values with MAX; PostgreSQL has no max(bytea).
CREATE FUNCTION standin.bytea_larger(a bytea, b bytea) RETURNS bytea LANGUAGE sql IMMUTABLE STRICT
    AS $$ SELECT CASE WHEN b > a THEN b ELSE a END $$;
CREATE AGGREGATE public.max(bytea) (sfunc = standin.bytea_larger, stype = bytea);

CREATE FUNCTION standin.position() RETURNS bytea LANGUAGE sql VOLATILE AS $$
    SELECT decode(lpad(split_part(pg_current_wal_lsn()::text, '/', 1), 8, '0')
                  || lpad(split_part(pg_current_wal_lsn()::text, '/', 2), 8, '0') || '0000000000000000', 'hex') $$;

CREATE FUNCTION asncdc.asncdcservices(action text, capture_schema text) RETURNS varchar LANGUAGE plpgsql AS $$
DECLARE
    running boolean := (SELECT a.running FROM standin.asncap a);
BEGIN
    IF lower(capture_schema) <> 'asncdc' THEN
        RETURN 'asncdc: unknown capture schema ' || capture_schema;
    END IF;
    CASE lower(action)
        WHEN 'status' THEN
            RETURN CASE WHEN running THEN 'asncap is doing work' ELSE 'asncap is not running' END;
        WHEN 'start' THEN
            RETURN CASE WHEN running THEN 'asncap is already running'
                        ELSE 'start --> asncap capture_schema=asncdc capture_server=' || current_database() || ' &' END;
        WHEN 'stop' THEN
            RETURN CASE WHEN running THEN 'stop --> asnccmd capture_schema=asncdc capture_server='
                        || current_database() || ' stop' ELSE 'asncap is not running' END;
        WHEN 'reinit' THEN
            UPDATE standin.asncap SET reinits = reinits + 1;
            RETURN CASE WHEN running THEN 'REINIT command issued' ELSE 'asncap is not running' END;
        ELSE
            RETURN 'asncdc: unknown action ' || action;
    END CASE;
END $$;

CREATE PROCEDURE asncdc.addtable(tableschema varchar, tablename varchar) LANGUAGE plpgsql AS $$
DECLARE
    cd text := 'CDC_' || tableschema || '_' || tablename;
    cols text;
    now_lsn bytea := standin.position();
BEGIN
    IF to_regclass(format('%I.%I', tableschema, tablename)) IS NULL THEN
        RAISE EXCEPTION 'table %.% does not exist', tableschema, tablename USING ERRCODE = '42P01';
    END IF;
    SELECT string_agg(format('%I %s', a.attname, format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY a.attnum)
      INTO cols FROM pg_attribute a
     WHERE a.attrelid = format('%I.%I', tableschema, tablename)::regclass AND a.attnum > 0 AND NOT a.attisdropped;
    EXECUTE format('CREATE TABLE "ASNCDC".%I (ibmsnap_commitseq bytea NOT NULL, ibmsnap_intentseq bytea NOT NULL, '
                   'ibmsnap_operation char(1) NOT NULL, %s)', cd, cols);
    EXECUTE format('CREATE UNIQUE INDEX ON "ASNCDC".%I (ibmsnap_commitseq, ibmsnap_intentseq)', cd);
    -- DATA CAPTURE CHANGES: the full row in the log.
    EXECUTE format('ALTER TABLE %I.%I REPLICA IDENTITY FULL', tableschema, tablename);
    -- CD_OLD_SYNCHPOINT and CD_NEW_SYNCHPOINT null, as Debezium's asncdcaddremove.sql ADDTABLE inserts them: the
    -- agent sets CD_NEW_SYNCHPOINT as it writes CD rows; nothing sets CD_OLD_SYNCHPOINT (Apply's CAPSTART would).
    INSERT INTO asncdc.ibmsnap_register (source_owner, source_table, cd_owner, cd_table, phys_change_owner,
        phys_change_table, cd_old_synchpoint, cd_new_synchpoint, state)
        VALUES (tableschema, tablename, 'ASNCDC', cd, 'ASNCDC', cd, NULL, NULL, 'A');
    INSERT INTO asncdc.ibmsnap_pruncntl (target_server, target_owner, target_table, source_owner, source_table,
        apply_qual, set_name, cntl_server, phys_change_owner, phys_change_table, map_id)
        VALUES (current_database(), tableschema, 'CDC_' || tablename, tableschema, tablename, 'asncdc', 'asncdc',
                current_database(), 'ASNCDC', cd,
                (SELECT (count(*) + 1)::text FROM asncdc.ibmsnap_pruncntl));
    INSERT INTO standin.capture_start VALUES (tableschema, tablename, now_lsn)
        ON CONFLICT (source_owner, source_table) DO UPDATE SET start_lsn = EXCLUDED.start_lsn;
END $$;

CREATE PROCEDURE asncdc.removetable(tableschema varchar, tablename varchar) LANGUAGE plpgsql AS $$
DECLARE
    cd text := (SELECT cd_table FROM asncdc.ibmsnap_register WHERE source_owner = tableschema
                AND source_table = tablename);
BEGIN
    DELETE FROM asncdc.ibmsnap_register WHERE source_owner = tableschema AND source_table = tablename;
    DELETE FROM asncdc.ibmsnap_pruncntl WHERE source_owner = tableschema AND source_table = tablename;
    DELETE FROM standin.capture_start WHERE source_owner = tableschema AND source_table = tablename;
    IF cd IS NOT NULL THEN
        EXECUTE format('DROP TABLE IF EXISTS "ASNCDC".%I', cd);
    END IF;
END $$;
GRANT USAGE ON SCHEMA sysibm, syscat TO PUBLIC;
-- Every user reads TIMESTAMP(7..12) columns (the type and VARCHAR's function live here; its tables stay private).
GRANT USAGE ON SCHEMA standin TO PUBLIC;
GRANT SELECT ON ALL TABLES IN SCHEMA sysibm, syscat TO PUBLIC;
"""

#: Db2 for z/OS's catalog tables over the same PostgreSQL catalog and ``standin.column_types`` (its LUW
#: descriptions, turned into z/OS's: ``COLTYPE`` codes, LOB ``LENGTH`` 4 with ``LENGTH2``, ``DECFLOAT`` in
#: bytes, ``TIMESTMP`` lengths, ``FOREIGNKEY``/``CCSID``, a ``DEFAULT`` code with a ``DEFAULTVALUE``: ``N``/``Y``
#: for none or NULL, ``B`` for a date/time register (z/OS's WITH DEFAULT), ``L`` here for a constant, whose
#: text is kept as ``SYSCAT.COLUMNS.DEFAULT`` has it). ``SYSCAT`` is renamed away: z/OS has none.
ZOS_OBJECTS = r"""
CREATE VIEW sysibm.systables AS
    SELECT c.relname::varchar AS name, n.nspname::varchar AS creator, 'T'::char(1) AS type,
           1::smallint AS dbid, (c.oid::bigint % 32000)::smallint AS obid
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'standin');
CREATE VIEW sysibm.syscolumns AS
    SELECT l.name, l.tbname, l.tbcreator, l.colno,
           (CASE l.t WHEN 'CHARACTER' THEN 'CHAR' WHEN 'VARGRAPHIC' THEN 'VARG' WHEN 'LONG VARCHAR' THEN 'LONGVAR'
                     WHEN 'LONG VARGRAPHIC' THEN 'LONGVARG' WHEN 'TIMESTAMP' THEN 'TIMESTMP'
                     WHEN 'VARBINARY' THEN 'VARBIN' WHEN 'REAL' THEN 'FLOAT' WHEN 'DOUBLE' THEN 'FLOAT'
                     ELSE left(l.t, 8) END)::char(8) AS coltype,
           (CASE WHEN l.t IN ('BLOB', 'CLOB', 'DBCLOB') THEN 4
                 WHEN l.t = 'TIMESTAMP' THEN 7 + (l.scale + 1) / 2 WHEN l.t = 'REAL' THEN 4
                 WHEN l.t = 'DOUBLE' THEN 8 ELSE l.len END)::smallint AS length,
           (CASE WHEN l.t IN ('BLOB', 'CLOB', 'DBCLOB') THEN l.len ELSE 0 END) AS length2,
           l.scale::smallint AS scale, l.nulls,
           (CASE WHEN l.dflt IS NULL THEN l.nulls
                 WHEN upper(l.dflt) = 'NULL' THEN 'Y'
                 WHEN upper(l.dflt) IN ('CURRENT DATE', 'CURRENT TIME', 'CURRENT TIMESTAMP') THEN 'B'
                 ELSE 'L' END)::char(1) AS "DEFAULT",
           (CASE WHEN l.dflt IS NULL OR upper(l.dflt) IN ('NULL', 'CURRENT DATE', 'CURRENT TIME', 'CURRENT TIMESTAMP')
                 THEN '' ELSE l.dflt END)::varchar(1536) AS defaultvalue,
           COALESCE(l.keyseq, 0)::smallint AS keyseq,
           (CASE WHEN l.t IN ('CHARACTER', 'VARCHAR', 'LONG VARCHAR', 'CLOB', 'GRAPHIC', 'VARGRAPHIC',
                              'LONG VARGRAPHIC', 'DBCLOB') THEN CASE WHEN l.codepage = 0 THEN 'B' ELSE 'M' END
                 ELSE ' ' END)::char(1) AS foreignkey,
           (CASE WHEN l.t IN ('CHARACTER', 'VARCHAR', 'LONG VARCHAR', 'CLOB', 'GRAPHIC', 'VARGRAPHIC',
                              'LONG VARGRAPHIC', 'DBCLOB') AND l.codepage <> 0 THEN l.codepage ELSE 0 END) AS ccsid
    FROM (SELECT c.colname::varchar AS name, c.tabname AS tbname, c.tabschema AS tbcreator,
                 (c.colno + 1)::smallint AS colno, c.typename AS t, c.length AS len, c.scale, c.nulls,
                 c."DEFAULT" AS dflt, c.keyseq, c.codepage FROM syscat.columns c) l;
GRANT SELECT ON ALL TABLES IN SCHEMA sysibm TO PUBLIC;
ALTER SCHEMA syscat RENAME TO standin_syscat;
"""
