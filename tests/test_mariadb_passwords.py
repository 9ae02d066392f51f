"""MariaDB users whose passwords go beyond ASCII, or hold quotes, semicolons and newlines, log in as the mariadb client does."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from cdc_process import CdcProcess, write_java_properties
from mariadb_cdc import mariadb_properties

PASSWORDS = ["S3cr3t-Zébra-42", "S3cr3t-Zebra-42€", "S3cr3t-😀-42", "it's;a \"pass\"\nword\\ ="]


@pytest.mark.parametrize("password", PASSWORDS, ids=["latin1", "euro", "emoji", "quotes-newline"])
def test_password_beyond_ascii_logs_in(mariadb_server, mariadb_db, tmp_path, password):
    user = "cdc_pw_user"
    mariadb_server.execute(["DROP USER IF EXISTS 'cdc_pw_user'@'%'"])
    mariadb_server.execute("CREATE USER 'cdc_pw_user'@'%%' IDENTIFIED BY %s", params=(password,))
    mariadb_server.execute("GRANT ALL ON *.* TO 'cdc_pw_user'@'%'")
    try:
        client = shutil.which("mariadb") or shutil.which("mysql")
        if client and "\n" not in password:  # the reference: the server's own client logs in with it
            done = subprocess.run([client, "-h", mariadb_server.host, "-P", str(mariadb_server.port), "-u", user,
                                   f"--password={password}", "-e", "SELECT 1"], capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
        mariadb_server.execute("CREATE TABLE pw (id int PRIMARY KEY)", database=mariadb_db)
        mariadb_server.execute("INSERT INTO pw VALUES (1)", database=mariadb_db)
        props = mariadb_properties(mariadb_server, mariadb_db, tmp_path, **{"database.user": user,
                                                                          "database.password": password})
        cdc = CdcProcess(write_java_properties(tmp_path / "app.properties", props), tmp_path).start()
        cdc.wait_events(f"dbserver1.{mariadb_db}.pw", 1)  # the snapshot's connection
        mariadb_server.execute("INSERT INTO pw VALUES (2)", database=mariadb_db)
        cdc.wait_events(f"dbserver1.{mariadb_db}.pw", 2)  # the binlog's connection
        assert cdc.terminate() == 0, cdc.log()
        assert "Traceback" not in cdc.log()
    finally:
        mariadb_server.execute(["DROP USER IF EXISTS 'cdc_pw_user'@'%'"])
