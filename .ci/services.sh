#!/usr/bin/env bash
# Makes sure the local PostgreSQL and MariaDB that the tests use are
# installed, running and reachable as the tests expect:
#   PostgreSQL 127.0.0.1:5432, trust auth, database "test"
#   MariaDB    127.0.0.1:3306, root with an empty password, database "test"
set -euo pipefail

updated=0
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  if [ "$updated" = 0 ]; then apt-get update -qq; updated=1; fi
  apt-get install -y -qq "$@" >/dev/null
}

wait_for() { # wait_for DESCRIPTION COMMAND...
  local what=$1; shift
  for _ in $(seq 1 60); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  echo "services: $what did not come up" >&2
  return 1
}

postgres() {
  if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
    echo "services: installing PostgreSQL"
    apt_install postgresql
  fi
  local ver
  ver=$(ls /etc/postgresql | sort -V | tail -n 1)
  local hba=/etc/postgresql/$ver/main/pg_hba.conf
  if ! grep -Eq '^host[[:space:]]+all[[:space:]]+all[[:space:]]+127\.0\.0\.1/32[[:space:]]+trust' "$hba"; then
    sed -i '1i host all all 127.0.0.1/32 trust' "$hba"
    pg_ctlcluster --skip-systemctl-redirect "$ver" main reload 2>/dev/null || true
  fi
  if ! pg_isready -q -h 127.0.0.1 -p 5432; then
    echo "services: starting PostgreSQL $ver"
    pg_ctlcluster --skip-systemctl-redirect "$ver" main start
  fi
  wait_for PostgreSQL pg_isready -q -h 127.0.0.1 -p 5432
  if ! psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1; then
    psql -h 127.0.0.1 -U postgres -c "CREATE DATABASE test" >/dev/null
  fi
}

mariadb_up() { mariadb-admin --protocol=tcp -h 127.0.0.1 -P 3306 -uroot ping; }

mariadb() {
  if [ ! -x /usr/sbin/mariadbd ]; then
    echo "services: installing MariaDB"
    apt_install mariadb-server
  fi
  if ! mariadb-admin ping >/dev/null 2>&1; then
    echo "services: starting MariaDB"
    mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null || true
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
    wait_for "MariaDB (socket)" mariadb-admin ping
  fi
  if ! mariadb_up >/dev/null 2>&1; then
    # A fresh install lets root in through the socket only.
    command mariadb -uroot -e "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
      GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION; FLUSH PRIVILEGES;"
  fi
  wait_for "MariaDB (tcp)" mariadb_up
  command mariadb --protocol=tcp -h 127.0.0.1 -uroot -e "CREATE DATABASE IF NOT EXISTS test"
}

# programs some tests run themselves, on their own loopback ports: headless
# Chromium (contrib/console's browser tests and screenshots); galera-4, rsync
# and pgbouncer (.tests/scaleout: a 3-node Galera cluster, PgBouncer in
# transaction mode); patroni, its etcd client and etcd-server
# (.tests/scaleout: PostgreSQL failover managed by Patroni). A missing one
# fails those tests in CI, so install it.
tools() {
  local pkgs=()
  command -v chromium >/dev/null 2>&1 || pkgs+=(chromium)
  [ -e /usr/lib/galera/libgalera_smm.so ] || pkgs+=(galera-4)
  command -v rsync >/dev/null 2>&1 || pkgs+=(rsync)
  command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ] || pkgs+=(pgbouncer)
  command -v patroni >/dev/null 2>&1 || pkgs+=(patroni)
  # patroni runs on /usr/bin/python3 (not whatever python3 is first on PATH).
  /usr/bin/python3 -c 'import etcd' >/dev/null 2>&1 || pkgs+=(python3-etcd)
  command -v etcd >/dev/null 2>&1 || [ -x /usr/bin/etcd ] || pkgs+=(etcd-server)
  if [ "${#pkgs[@]}" -gt 0 ]; then
    echo "services: installing ${pkgs[*]} for the browser and scale-out tests"
    apt_install "${pkgs[@]}"
  fi
}

postgres
mariadb
tools
echo "services: PostgreSQL and MariaDB are up"
