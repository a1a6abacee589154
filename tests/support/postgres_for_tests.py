"""A real PostgreSQL 16 with pgvector for the team-store tests (PyPI `pgserver`).

Usage: python3 pgserver.py DIR
Starts a server whose data lives in DIR (created; deleted at the end), creates the `vector`
extension, prints one line, a libpq key-value connection string (`host=SOCKET_DIR
user=postgres dbname=postgres`), and serves until its standard input closes.
"""

import os
import sys

import pgserver

def main() -> None:
    where = os.path.abspath(sys.argv[1])
    os.makedirs(os.path.dirname(where), exist_ok=True)
    server = pgserver.get_server(where, cleanup_mode="delete")
    server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
    print(f"host={where} user=postgres dbname=postgres", flush=True)
    sys.stdin.read()
    server.cleanup()

if __name__ == "__main__":
    main()
