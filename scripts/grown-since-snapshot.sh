#!/usr/bin/env bash
# grown-since-snapshot.sh [FLAVOR]: the manifest's own server, grown after its snapshot by
# appended rows (384,000 new orders of random customers on 384,000: the customer index's hot
# leaves split, their first keys kept), restarted cold; the misses of one pass of the
# workload after `warm --from` by two builds, alternating (docs/warm-by-key.md, "A server
# grown since its snapshot"). Needs the mariadb (or mysql) client and python3.
#
#   OLD=/path/to/innowarm-before NEW=bin/innowarm scripts/grown-since-snapshot.sh mysql-9.7
#
# WARM_ARGS adds arguments to both builds' `warm --from`: WARM_ARGS="--by-key sql" measures
# the path of a target that is not on innowarm's host.
set -euo pipefail
flavor=${1:-mariadb-10.11}
D=${TMPDIR:-/tmp}/grown-$flavor
NEW=${NEW:-$(cd "$(dirname "$0")/.." && pwd)/bin/innowarm}
OLD=${OLD:-$NEW}
rm -rf "$D"; mkdir -p "$D"
"$NEW" sandbox up --dir "$D/sb" --pool-size 128M --flavor "$flavor" >/dev/null
S=$D/sb/mysqld.sock
MYSQL=(mariadb --no-defaults -S "$S" -u root -N -B)
command -v mariadb >/dev/null || MYSQL=(mysql --no-defaults -S "$S" -u root -N -B)
sql() { "${MYSQL[@]}" -e "$1"; }
reads() { sql "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_reads'" | awk '{print $2}'; }
sql "CREATE DATABASE g; CREATE TABLE g.orders (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, customer INT NOT NULL, amount DECIMAL(10,2) NOT NULL, pad CHAR(60) NOT NULL DEFAULT '', KEY by_customer (customer)) ENGINE=InnoDB"
for i in $(seq 1 30); do
  sql "INSERT INTO g.orders (customer, amount) SELECT FLOOR(1 + RAND(${i}00 + seq) * 20000), seq % 1000 FROM (SELECT a.x * 100 + b.x AS seq FROM (SELECT 0 x UNION SELECT 1 UNION SELECT 2 UNION SELECT 3 UNION SELECT 4 UNION SELECT 5 UNION SELECT 6 UNION SELECT 7 UNION SELECT 8 UNION SELECT 9) a, (SELECT 0 x UNION SELECT 1 UNION SELECT 2 UNION SELECT 3 UNION SELECT 4 UNION SELECT 5 UNION SELECT 6 UNION SELECT 7 UNION SELECT 8 UNION SELECT 9) b) s"
done
# 3,000 rows, doubled 7 times: 384,000, in key (id) order, customers at random
for i in $(seq 1 7); do sql "INSERT INTO g.orders (customer, amount) SELECT FLOOR(1 + RAND() * 20000), amount FROM g.orders"; done
sql "ANALYZE TABLE g.orders" >/dev/null
rows=$(sql "SELECT COUNT(*) FROM g.orders")
hotc=$(python3 -c "import random; random.seed(7); print(','.join(str(x) for x in random.sample(range(1,20001), 1500)))")
maxid=$(sql "SELECT MAX(id) FROM g.orders")
hoti=$(python3 -c "import random; random.seed(8); print(','.join(str(x) for x in random.sample(range(1,$maxid+1), 2500)))")
pass() { local b; b=$(reads); sql "SELECT COUNT(*) FROM g.orders WHERE customer IN ($hotc)" >/dev/null; sql "SELECT SUM(amount) FROM g.orders WHERE id IN ($hoti)" >/dev/null; echo $(( $(reads) - b )); }
cold() { $NEW sandbox cold-restart --dir $D/sb >/dev/null; }
cold; pass >/dev/null; pass >/dev/null
$NEW snapshot -S $S -u root -o $D/m.manifest -D g >/dev/null 2>&1
# Grown: 384,000 new orders of random customers, appended ids.
for i in 1 2 3 4 5 6; do sql "INSERT INTO g.orders (customer, amount) SELECT FLOOR(1 + RAND() * 20000), amount FROM g.orders LIMIT 64000"; done
grown=$(sql "SELECT COUNT(*) FROM g.orders")
cold; c=$(pass); h=$(pass)
echo "$flavor: rows $rows -> $grown; cold pass misses $c, hot $h"
for b in OLD NEW OLD NEW; do
  bin=${!b}
  cold
  paths=$($bin warm -S $S -u root --from $D/m.manifest ${WARM_ARGS:-} 2>/dev/null | grep -E "PRIMARY  *│|by_customer  *│" | grep -oE "│ +(pages|tree|sql) +│" | tr -d '│ ' | tr '\n' ' ')
  m=$(pass)
  echo "$b: after warm --from, misses $m ($paths)"
done
$NEW sandbox down --dir $D/sb --purge >/dev/null
