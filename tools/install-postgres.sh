#!/usr/bin/env bash
# Install the PostgreSQL server that `stores.backend = "postgres"` runs: Debian's postgresql
# package (initdb and postgres under /usr/lib/postgresql/<version>/bin; psycopg comes with
# `pip install 'acksim[postgres]'`, which `make setup` installs). Runs apt-get only as root, with
# apt-get present, and only when the binaries are missing; the package's own system service is
# kept from starting (a temporary policy-rc.d) and stopped and disabled afterwards: acksim starts
# a private cluster of its own in a temporary folder, on a Unix socket, as the `postgres` OS user
# the package creates. Where it cannot install it prints one line saying so and exits 0 (the
# PostgreSQL tests then skip, naming this script). Idempotent.
set -euo pipefail

have_postgres() { ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; }

if have_postgres; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "install-postgres: not root or no apt-get: postgresql not installed" \
         "(run as root: apt-get install -y --no-install-recommends postgresql)" >&2
    exit 0
fi
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"
    chmod +x "$policy"
    made_policy=1
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
if ! apt-cache show postgresql >/dev/null 2>&1; then
    apt-get update -q
fi
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql
if [ "$made_policy" = 1 ]; then rm -f "$policy"; trap - EXIT; fi
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    systemctl disable --now postgresql >/dev/null 2>&1 || true
elif [ -x /etc/init.d/postgresql ]; then
    /etc/init.d/postgresql stop >/dev/null 2>&1 || true
    update-rc.d postgresql disable >/dev/null 2>&1 || true
fi
echo "install-postgres: postgresql installed; its system service stopped and disabled"
