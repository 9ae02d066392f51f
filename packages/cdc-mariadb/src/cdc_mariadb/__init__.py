"""cdc MariaDB connector: MariaDB's differences on top of cdc-mysql."""
