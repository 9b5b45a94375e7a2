#!/bin/sh
# Entrypoint of the llm-observe all-in-one image (docker/Dockerfile):
#  1. at first start, generate the Grafana admin password into the data volume
#     (no fixed admin/admin; `llm-observe start` reads and prints it);
#  2. render the provisioning at every start (a new image brings new dashboards);
#  3. find which of supervisord.conf's programs the image holds (the `local` build has
#     no Grafana, Tempo, Loki or Alloy), say in one line what is absent and run the rest;
#  4. export the collector settings (values given with `docker run -e` win);
#  5. hand over to supervisord.
# The LLM_OBSERVE_* path variables below exist for tests; the image uses the defaults.
set -eu

DATA="${LLM_OBSERVE_DATA_DIR:-/var/lib/llm-observe}"
LOGS="${LLM_OBSERVE_LOG_DIR:-/var/log/llm-observe}"
PROV="${LLM_OBSERVE_PROVISIONING_DIR:-/etc/llm-observe/provisioning}"
SUPERVISOR_CONF="${LLM_OBSERVE_SUPERVISOR_CONF:-/etc/llm-observe/supervisord.conf}"
SUPERVISORD="${LLM_OBSERVE_SUPERVISORD:-/usr/bin/supervisord}"
# prefix of the program paths in supervisord.conf (tests point it at a fake tree)
PROGRAM_ROOT="${LLM_OBSERVE_PROGRAM_ROOT:-}"

for d in grafana prometheus tempo loki alloy spool; do mkdir -p "$DATA/$d"; done
mkdir -p "$LOGS" "$PROV"

PASSWORD_FILE="$DATA/grafana/admin-password"
if [ ! -s "$PASSWORD_FILE" ]; then
    (umask 077 && python3 -c 'import secrets; print(secrets.token_urlsafe(18))' \
        > "$PASSWORD_FILE.tmp" && mv "$PASSWORD_FILE.tmp" "$PASSWORD_FILE")
    echo "llm-observe: Grafana admin password (user admin): $(cat "$PASSWORD_FILE")"
    echo "llm-observe: kept in $PASSWORD_FILE on the data volume; \`llm-observe start\` prints it"
fi

llm-observe render --profile container --out "$PROV" --data-dir "$DATA" --log-dir "$LOGS" \
    ${LLM_OBSERVE_SCRAPE_INTERVAL:+--scrape-interval "$LLM_OBSERVE_SCRAPE_INTERVAL"} \
    ${LLM_OBSERVE_ALERTS_FILE:+--alerts "$LLM_OBSERVE_ALERTS_FILE"}

# supervisord.conf less the programs whose executable is not in this image, into $PROV
absent=$(python3 - "$SUPERVISOR_CONF" "$PROV/supervisord.conf" "$PROGRAM_ROOT" <<'PY'
import configparser, os, shlex, sys
conf = configparser.ConfigParser(interpolation=None)
conf.read(sys.argv[1])
absent = []
for section in [s for s in conf.sections() if s.startswith("program:")]:
    argv = shlex.split(conf[section]["command"])
    if argv[0].endswith("/wait-for-grafana"):
        argv = argv[1:]
    if not os.access(sys.argv[3] + argv[0], os.X_OK):
        absent.append(section.split(":", 1)[1])
        conf.remove_section(section)
with open(sys.argv[2], "w") as out:
    conf.write(out)
print(" ".join(absent))
PY
)
if [ -n "$absent" ]; then
    echo "llm-observe: not in this image (a local build): $absent; starting the rest"
    # nothing to wait for without Grafana; no Tempo to forward traces to (empty = off)
    case " $absent " in *" grafana "*) export LLM_OBSERVE_GRAFANA_WAIT_S=0 ;; esac
    case " $absent " in *" tempo "*) export LLM_OBSERVE_TEMPO_ENDPOINT="${LLM_OBSERVE_TEMPO_ENDPOINT-}" ;; esac
    SUPERVISOR_CONF="$PROV/supervisord.conf"
fi

while IFS='=' read -r key value; do
    case "$key" in ''|'#'*) continue ;; esac
    # keys are LLM_OBSERVE_[A-Z_]+ from our own template, so eval is safe here
    if eval "[ -z \"\${$key+set}\" ]"; then export "$key=$value"; fi
done < "$PROV/collector/collector.env"

exec "$SUPERVISORD" -n -c "$SUPERVISOR_CONF"
