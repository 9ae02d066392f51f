"""MySQL/MariaDB DDL applied to the table model: sqlglot parses, this package interprets.

Statements are classified by their leading keywords (sqlglot's tokenizer, so quoting and comments
are handled: ``tokens``). CREATE TABLE goes through sqlglot's MySQL parser (``parsing``,
``columns``); ALTER TABLE is split into its actions, each column definition parsed by sqlglot
(``alter``); RENAME, DROP, TRUNCATE and the database statements are read from the tokens
(``schema_model``). Anything that is not table or database DDL is ignored. A statement that
touches tables but cannot be understood raises ``UnparseableDdl`` (naming the tables, when they
can be told), and the model is left unchanged.
"""

from cdc_mysql.ddl.columns import column_from_sqlglot
from cdc_mysql.ddl.errors import UnparseableDdl
from cdc_mysql.ddl.schema_model import AppliedDdl, SchemaModel
from cdc_mysql.ddl.tokens import Statement, mentioned_tables, split_statements, tokenize

__all__ = ["AppliedDdl", "SchemaModel", "Statement", "UnparseableDdl", "column_from_sqlglot", "mentioned_tables",
           "split_statements", "tokenize"]
