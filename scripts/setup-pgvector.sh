#!/usr/bin/env bash
# Make sure `CREATE EXTENSION vector` works on the PostgreSQL server the tests use.
#
#   scripts/setup-pgvector.sh            # uses DOCSHELF_TEST_POSTGRES_URL or the default below
#
# Quiet and quick when pgvector is already there. Otherwise (as root, on a
# Debian machine whose PostgreSQL runs locally) it builds pgvector from
# Debian's `pgvector` source package of the trixie release against
# postgresql-server-dev-<major>, installs it and creates the extension:
# about 40 seconds, once per machine. The trixie source index is fetched into a
# temporary apt state (its own sources list and lists directory) from the
# Debian mirror this machine already uses, so the system's apt setup is left
# as it was. It reaches no network but Debian's package archive.
set -euo pipefail

URL="${DOCSHELF_TEST_POSTGRES_URL:-postgresql://postgres@127.0.0.1:5432/test}"
SHOWN_URL="$(printf '%s' "$URL" | sed -E 's#(://[^:/@]*):[^@]*@#\1:***@#')"
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"

psql_q() { psql "$URL" -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }

if ! psql_q -c "SELECT 1" >/dev/null 2>&1; then
    echo "setup-pgvector: cannot connect to PostgreSQL at $SHOWN_URL;" \
        "start the server or set DOCSHELF_TEST_POSTGRES_URL" >&2
    exit 1
fi
if psql_q -c "CREATE EXTENSION IF NOT EXISTS vector" >/dev/null 2>&1; then
    exit 0  # already there: nothing to do
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "setup-pgvector: the pgvector extension is missing on $SHOWN_URL and building it" \
        "needs root (apt-get, make install); run this script as root" >&2
    exit 1
fi

MAJOR="$(psql_q -c "SELECT current_setting('server_version_num')::int / 10000")"
PG_CONFIG="/usr/lib/postgresql/$MAJOR/bin/pg_config"
WORK="$(mktemp -d /tmp/docshelf-pgvector.XXXXXX)"
LOG="$WORK/build.log"
trap 'rm -rf "$WORK"' EXIT

fail() {
    echo "setup-pgvector: $1 (log follows)" >&2
    tail -n 40 "$LOG" >&2 || true
    exit 1
}

echo "setup-pgvector: building pgvector for PostgreSQL $MAJOR (about 40 s, once per machine)"

export DEBIAN_FRONTEND=noninteractive
needed=()
for pkg in "postgresql-server-dev-$MAJOR" build-essential dpkg-dev; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || needed+=("$pkg")
done
if [ "${#needed[@]}" -gt 0 ]; then
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${needed[@]}"; } \
        >>"$LOG" 2>&1 || fail "could not install ${needed[*]}"
fi

# The Debian mirror already configured for this release, reused for trixie's sources.
# shellcheck disable=SC1091
CODENAME="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
MIRROR="$(apt-get indextargets --no-release-info --format '$(REPO_URI) $(RELEASE)' 2>/dev/null \
    | awk -v rel="$CODENAME" '$2 == rel { print $1; exit }')"
[ -n "$MIRROR" ] || fail "no Debian mirror configured for '$CODENAME' in apt's sources"

mkdir -p "$WORK/lists/partial" "$WORK/parts" "$WORK/src"
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR trixie main" \
    >"$WORK/sources.list"
APT_TMP=(
    -o "Dir::Etc::SourceList=$WORK/sources.list"
    -o "Dir::Etc::SourceParts=$WORK/parts"
    -o "Dir::State::Lists=$WORK/lists"
    -o "Dir::Cache::pkgcache="
    -o "Dir::Cache::srcpkgcache="
)
apt-get "${APT_TMP[@]}" update >>"$LOG" 2>&1 || fail "apt-get update of trixie's sources failed"
(cd "$WORK/src" && apt-get "${APT_TMP[@]}" source pgvector) >>"$LOG" 2>&1 \
    || fail "apt-get source pgvector failed"

SRC="$(find "$WORK/src" -mindepth 1 -maxdepth 1 -type d -name 'pgvector-*' | head -n 1)"
[ -n "$SRC" ] || fail "the pgvector source package unpacked nothing"
make -C "$SRC" -j"$(nproc)" PG_CONFIG="$PG_CONFIG" >>"$LOG" 2>&1 || fail "building pgvector failed"
make -C "$SRC" install PG_CONFIG="$PG_CONFIG" >>"$LOG" 2>&1 || fail "installing pgvector failed"

psql_q -c "CREATE EXTENSION IF NOT EXISTS vector" >>"$LOG" 2>&1 \
    || fail "pgvector is installed but CREATE EXTENSION vector still fails on $SHOWN_URL"
echo "setup-pgvector: pgvector $(psql_q -c "SELECT extversion FROM pg_extension WHERE extname = 'vector'") ready on $SHOWN_URL"
