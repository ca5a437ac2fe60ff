"""Runs trino-python-client's OAuth2Authentication against a Trino
coordinator (or the gateway) at https://HOST:PORT, trusting CA_FILE, as
USER: its redirect handler prints the URL to open on a line of its own
(the test opens it, as the user's browser would), and the result is
printed as JSON for oauth2_test.go.

usage: python_oauth2.py HOST PORT CA_FILE USER
"""
import json
import sys

import trino
from trino.auth import OAuth2Authentication

host, port, ca_file, user = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]


def print_url(url):
    print(url, flush=True)


conn = trino.dbapi.connect(
    host=host, port=port, user=user, catalog="tpch", schema="tiny",
    http_scheme="https", verify=ca_file,
    auth=OAuth2Authentication(redirect_auth_url_handler=print_url),
)
cur = conn.cursor()
cur.execute("SELECT current_user")
out = {"user": cur.fetchall()[0][0]}
cur.execute("SELECT count(*) FROM nation")
out["count"] = cur.fetchall()[0][0]
print(json.dumps(out), flush=True)
