"""A stand-in for Db2 with SQL Replication, for tests: a throwaway PostgreSQL holding the ASN objects.

``server.StandIn`` builds ``SYSCAT``/``SYSIBM`` views (or, with ``platform="ZOS"``, z/OS's
``SYSIBM.SYSTABLES``/``SYSIBM.SYSCOLUMNS`` and no ``SYSCAT``), the ``ASNCDC`` control tables (IBMSNAP_REGISTER,
IBMSNAP_UOW, IBMSNAP_CAPPARMS, IBMSNAP_PRUNCNTL) and routines (ASNCDCSERVICES, ADDTABLE, REMOVETABLE)
on a PostgreSQL database; ``agent.CaptureAgent`` fills the CD tables from the WAL as asncap does;
``dbapi`` is the ibm_db_dbi-shaped connection that runs the connector's Db2 SQL there, adapting
what PostgreSQL lacks in one place (``translate``). Nothing here is used in production.
"""
