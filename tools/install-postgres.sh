#!/usr/bin/env bash
# Install the PostgreSQL server that `stores.backend = "postgres"` runs: Debian's postgresql
# package (initdb and postgres under /usr/lib/postgresql/<version>/bin; psycopg comes with
# `pip install 'acksim[postgres]'`, which `make setup` installs). Runs apt-get only as root, with
# apt-get present, and only when the binaries are missing; the package's own system service is
# kept from starting and stopped and disabled afterwards (tools/apt-install.sh): acksim starts a
# private cluster of its own in a temporary folder, on a Unix socket, as the `postgres` OS user
# the package creates. Where it cannot install it prints one line saying so and exits 0 (the
# PostgreSQL tests then skip, naming this script). Idempotent.
set -euo pipefail

if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; then
    exit 0
fi
"$(dirname "$0")/apt-install.sh" install-postgres postgresql -- postgresql
