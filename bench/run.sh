#!/usr/bin/env bash
# bench/run.sh — measure airlock against direct exec and peer sandboxes in ONE run.
#
#   bench/run.sh            full run: installs the peers it lacks (apt: bubblewrap, firejail,
#                           hyperfine, socat, ripgrep; npm into bench/.peers: srt, codex,
#                           @modelcontextprotocol/server-filesystem)
#   bench/run.sh --smoke    a couple of iterations per cell, installs nothing, skips the npm
#                           peers; finishes in well under a minute (CI runs this)
#   options: --runs N (timed runs per cell, default 40), --out DIR (default bench/results),
#            --rev REV (build airlock from committed revision REV, e.g. HEAD, instead of the
#            working tree, so a run describes a commit; REV must contain bench/),
#            --only mcp (run only the MCP read_file section: airlock mcp against cat spawned by
#            the same client, the MCP floor and the reference MCP filesystem server),
#            --only exec (the cold path only: direct, bwrap, airlock exec and airlock call on
#            true, read_file and sh, 50 at once, and memory; a few minutes)
#
# Writes DIR/results.md and DIR/results.json. Every system gets a row for every workload it
# can run, or a "skipped: reason" row; nothing is dropped silently. See bench/README.md.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$BENCH")
PEERS=$BENCH/.peers
OUT=$BENCH/results
SMOKE=0
RUNS=40
REV=""
ONLY=""

# The systems, in report order. "airlock call (unsandboxed)" separates the CLI's own cost
# (process start, session open, audit) from the sandbox's, for read_file.
SYSTEMS=(direct unshare bwrap firejail srt codex "airlock exec" "airlock call"
	"airlock call (unsandboxed)" "airlock session")
WORKLOADS=(true cat read_file sh)

log() { printf 'bench: %s\n' "$*" >&2; }

parse_args() {
	while [[ $# -gt 0 ]]; do
		case $1 in
		--smoke) SMOKE=1 ;;
		--runs) RUNS=$2; shift ;;
		--out) OUT=$2; shift ;;
		--rev) REV=$2; shift ;;
		--only) ONLY=$2; shift ;;
		-h | --help) sed -n '2,22p' "${BASH_SOURCE[0]}"; exit 0 ;;
		*) log "unknown argument $1"; exit 2 ;;
		esac
		shift
	done
	if [[ $ONLY == exec ]]; then
		SYSTEMS=(direct bwrap "airlock exec" "airlock call")
	elif [[ -n $ONLY && $ONLY != mcp && $ONLY != egress ]]; then
		log "unknown --only $ONLY (mcp, exec or egress)"
		exit 2
	fi
	if ((SMOKE)); then
		RUNS=2 WARMUP=1 BURST_N=10 BURST_ROUNDS=1 BURST_WARMUP=0 RATE_DUR=300ms SLEEP=0.4
	else
		WARMUP=3 BURST_N=50 BURST_ROUNDS=3 BURST_WARMUP=0 RATE_DUR=5s SLEEP=1
	fi
}

# ---- setup -------------------------------------------------------------------------------

install_peers() {
	if ((SMOKE)); then
		log "smoke: installing nothing"
		return
	fi
	if [[ $ONLY == exec ]]; then
		command -v bwrap >/dev/null && command -v hyperfine >/dev/null ||
			{ apt-get update -qq && apt-get install -y -qq bubblewrap hyperfine >/dev/null; } ||
			log "apt-get failed; bwrap is reported as skipped, cells are timed by benchtool"
		return
	fi
	if [[ $ONLY == mcp ]]; then
		[[ -x $PEERS/node_modules/.bin/mcp-server-filesystem ]] ||
			npm install --silent --no-audit --no-fund --prefix "$PEERS" @modelcontextprotocol/server-filesystem >&2 ||
			log "npm install failed; the MCP filesystem server is reported as skipped"
		return
	fi
	local missing=()
	command -v bwrap >/dev/null || missing+=(bubblewrap)
	command -v firejail >/dev/null || missing+=(firejail)
	command -v hyperfine >/dev/null || missing+=(hyperfine)
	command -v socat >/dev/null || missing+=(socat)   # srt's network bridge
	command -v rg >/dev/null || missing+=(ripgrep)    # srt checks for it
	if ((${#missing[@]})); then
		log "apt-get install ${missing[*]}"
		apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null ||
			log "apt-get failed; the peers it would have installed are reported as skipped"
	fi
	if [[ ! -x $PEERS/node_modules/.bin/srt || ! -x $PEERS/node_modules/.bin/codex ||
		! -x $PEERS/node_modules/.bin/mcp-server-filesystem ]]; then
		log "npm install --prefix $PEERS @anthropic-ai/sandbox-runtime @openai/codex @modelcontextprotocol/server-filesystem"
		npm install --silent --no-audit --no-fund --prefix "$PEERS" \
			@anthropic-ai/sandbox-runtime @openai/codex @modelcontextprotocol/server-filesystem >&2 ||
			log "npm install failed; srt, codex and the MCP filesystem server are reported as skipped"
	fi
}

build() {
	local src=$REPO
	mkdir -p "$PEERS"
	if [[ -n $REV ]]; then
		src=$PEERS/src
		rm -rf "$src" && mkdir -p "$src"
		git -C "$REPO" archive "$REV" | tar -x -C "$src"
		BUILT="$(git -C "$REPO" rev-parse --short "$REV") (git archive of $REV)"
	else
		BUILT="$(git -C "$REPO" describe --always --dirty) (working tree)"
	fi
	log "building airlock $BUILT and its separate init (stripped: -ldflags='-s -w'), benchtool, callbench"
	# airlock runs the airlock-init beside it only when both are of one build: a git archive
	# has no version control to say so, so the two are stamped alike (buildmatch.Stamp).
	local stamp="-s -w -X github.com/airlockhq/airlock/internal/buildmatch.Stamp=bench-$$-$(date +%s%N)"
	rm -f "$PEERS/airlock-init"
	(cd "$src" &&
		go build -ldflags="$stamp" -o "$PEERS/airlock" ./cmd/airlock &&
		{ [[ ! -d cmd/airlock-init ]] || CGO_ENABLED=0 go build -ldflags="$stamp" -o "$PEERS/airlock-init" ./cmd/airlock-init; } &&
		go build -o "$PEERS/benchtool" ./bench/cmd/benchtool &&
		go build -ldflags='-s -w' -o "$PEERS/callbench" ./bench/cmd/callbench)
	# The MCP floor is a yardstick, not airlock: always this checkout's.
	(cd "$REPO" && go build -ldflags='-s -w' -o "$PEERS/mcpfloor" ./bench/cmd/mcpfloor)
	AIRLOCK=$PEERS/airlock
	BT=$PEERS/benchtool
	CB=$PEERS/callbench
}

# The granted directory lives outside /tmp: firejail's private /tmp would hide it and codex
# refuses to put its helpers under /tmp.
make_workdir() {
	WORK=$PEERS/work
	STATE=$PEERS/state
	rm -rf "$WORK" "$STATE" "$PEERS/tmp"
	mkdir -p "$WORK" "$STATE" "$OUT" "$PEERS/codex-home" "$PEERS/tmp"
	local line="the quick brown fox jumps over the lazy dog, 0123456789abcdef"
	for _ in $(seq 70); do echo "$line"; done >"$WORK/data.txt"
	truncate -s 4096 "$WORK/data.txt"
	# srt: no network at all (no allowed domains), writes only to the granted directory,
	# home directories unreadable.
	cat >"$PEERS/srt-settings.json" <<-EOF
		{"network": {"allowedDomains": [], "deniedDomains": []},
		 "filesystem": {"denyRead": ["/root", "/home"], "allowRead": [], "allowWrite": ["$WORK"], "denyWrite": []}}
	EOF
	CELLS=$OUT/cells.jsonl
	: >"$CELLS"
}

# ---- workloads and systems ---------------------------------------------------------------

# workload_argv W: the command line of workload W, in WL.
workload_argv() {
	case $1 in
	true) WL=(/bin/true) ;;
	cat) WL=(cat data.txt) ;;
	sh) WL=(sh -c 'echo hi; ls / >/dev/null') ;;
	sleep) WL=(sleep "$SLEEP") ;;
	*) return 1 ;;
	esac
}

# workload_call W: the tool call of workload W, in TOOL and ARGS.
workload_call() {
	case $1 in
	true) TOOL=shell ARGS='{"command":"/bin/true"}' ;;
	cat) TOOL=shell ARGS='{"command":"cat data.txt"}' ;;
	read_file) TOOL=read_file ARGS='{"path":"data.txt"}' ;;
	sh) TOOL=shell ARGS='{"command":"echo hi; ls / >/dev/null"}' ;;
	sleep) TOOL=shell ARGS="{\"command\":\"sleep $SLEEP\"}" ;;
	esac
}

# Each sys_* function sets CMD (and NOTE) for workload $1, or sets REASON and returns 1.

sys_direct() {
	if [[ $1 == read_file ]]; then
		CMD=(cat data.txt) NOTE="the floor for read_file is cat of the same file"
		return
	fi
	workload_argv "$1"
	CMD=("${WL[@]}")
}

no_tools() { REASON="no tool-call interface; its cat row is the equivalent"; }

sys_unshare() {
	workload_argv "$1" || { no_tools; return 1; }
	CMD=(unshare --user --map-root-user --mount --uts --ipc --net --pid --fork --cgroup --time
		--kill-child -- "${WL[@]}")
	NOTE="namespaces only: no new root, no seccomp"
}

# Locked down like airlock's default: every namespace, read-only /usr, the granted directory
# read-write, private /tmp, /proc, /dev, no network, no capabilities, a new session.
# bwrap takes a seccomp filter only as compiled BPF, so none is given.
sys_bwrap() {
	command -v bwrap >/dev/null || { REASON="bwrap not installed (apt-get install bubblewrap)"; return 1; }
	workload_argv "$1" || { no_tools; return 1; }
	CMD=(bwrap --unshare-all --die-with-parent --new-session --cap-drop ALL
		--ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib
		--symlink usr/lib64 /lib64 --symlink usr/sbin /sbin
		--ro-bind /etc/alternatives /etc/alternatives --ro-bind /etc/ld.so.cache /etc/ld.so.cache
		--proc /proc --dev /dev --tmpfs /tmp --bind "$WORK" "$WORK" --chdir "$WORK"
		--hostname sandbox -- "${WL[@]}")
	NOTE="no seccomp filter"
}

sys_firejail() {
	command -v firejail >/dev/null || { REASON="firejail not installed (apt-get install firejail)"; return 1; }
	workload_argv "$1" || { no_tools; return 1; }
	CMD=(firejail --quiet --noprofile --net=none --ipc-namespace --private-tmp --private-dev
		--caps.drop=all --seccomp --nonewprivs --read-only=/ --read-write="$WORK"
		--blacklist=/root --blacklist=/home -- "${WL[@]}")
	NOTE="host root read-only (no new root), no user namespace"
}

npm_peer() {
	if ((SMOKE)); then
		REASON="smoke run: peers installed by the bench (npm) are skipped"
		return 1
	fi
	[[ -x $PEERS/node_modules/.bin/$1 ]] || { REASON="$1 not installed (npm install failed)"; return 1; }
}

sys_srt() {
	npm_peer srt || return 1
	workload_argv "$1" || { no_tools; return 1; }
	# TMPDIR: srt leaves a socket behind per run; keep them in the bench's folder.
	CMD=(env "TMPDIR=$PEERS/tmp" "$PEERS/node_modules/.bin/srt" --settings "$PEERS/srt-settings.json"
		-- "${WL[@]}")
	NOTE="node; bwrap with network proxies; no allowed domains"
}

sys_codex() {
	npm_peer codex || return 1
	workload_argv "$1" || { no_tools; return 1; }
	# Not /tmp: codex would make its protected directories (.git, .codex, .agents) there and
	# leave them behind.
	CMD=(env "CODEX_HOME=$PEERS/codex-home" "$PEERS/node_modules/.bin/codex" sandbox
		-c 'sandbox_mode="workspace-write"' -c 'sandbox_workspace_write.exclude_slash_tmp=true' -- "${WL[@]}")
	NOTE="codex sandbox (Linux: bwrap + seccomp), workspace-write (the directory, not /tmp), no network"
}

sys_airlock_exec() {
	workload_argv "$1" || { REASON="exec wraps commands; see airlock call and session"; return 1; }
	CMD=("$AIRLOCK" exec --records "$STATE" -- "${WL[@]}")
}

sys_airlock_call() {
	workload_call "$1"
	CMD=("$AIRLOCK" call --records "$STATE" "$TOOL" "$ARGS")
	[[ $TOOL == shell ]] && NOTE="shell tool: /bin/sh -c" || NOTE="cold: a new process per call"
}

sys_airlock_call_unsandboxed() {
	if [[ $1 != read_file && $1 != sleep ]]; then
		REASON="measured for read_file only"
		return 1
	fi
	workload_call "$1"
	CMD=("$AIRLOCK" call --unsandboxed --records "$STATE" "$TOOL" "$ARGS")
	NOTE="no sandbox: the CLI's own cost"
}

# system_fn S: the sys_* function of system S.
system_fn() {
	local s=${1//[ -]/_}
	s=${s//[()]/}
	echo "sys_$s"
}

# ---- measuring ---------------------------------------------------------------------------

oneline() { printf '%s' "$1" | tr '\n' ' ' | cut -c1-"${2:-300}"; }

# cell SECTION WORKLOAD SYSTEM CMD...: run a measuring command; when it fails, record the cell
# as failed with the error (and, for airlock, the detail its audit log gives the failure).
cell() {
	local sec=$1 w=$2 s=$3 err detail
	shift 3
	if ! err=$("$@" 2>&1 >/dev/null); then
		if [[ $s == airlock* ]]; then
			detail=$("$AIRLOCK" log --json --records "$STATE" 2>/dev/null | grep '"detail"' | tail -1 |
				sed -n 's/.*"detail":"\([^"]*\)".*/\1/p') || true
			[[ -n $detail ]] && err+=" (last failure in the audit log: $detail)"
		fi
		skip "$sec" "$w" "$s" "failed: $(oneline "$err" 400)"
	fi
}

skip() { # section workload system reason
	log "  skipped $3 / $2: $4"
	"$BT" skip -out "$CELLS" -section "$1" -workload "$2" -system "$3" -reason "$4"
}

# clean_workdir: the granted directory back to its one file. Peers leave directories in it
# (codex its protected .git and .agents, srt .claude), and every system is measured in the same
# plain directory: one holding .git would spare airlock the placeholders of a missing one.
clean_workdir() {
	local e left=()
	for e in "$WORK"/* "$WORK"/.[!.]* "$WORK"/..?*; do
		[[ -e $e || -L $e ]] || continue
		[[ $e == "$WORK/data.txt" ]] && continue
		left+=("${e#"$WORK"/}")
		rm -rf -- "$e"
	done
	((${#left[@]} == 0)) || log "  removed what the last system left in the directory: ${left[*]}"
}

# probe S: does system S run at all here? Sets REASON when not.
probe() {
	local fn err
	fn=$(system_fn "$1")
	NOTE=""
	"$fn" true || "$fn" read_file || return 1
	if ! err=$(cd "$WORK" && "${CMD[@]}" 2>&1 >/dev/null); then
		REASON="does not run here: $(oneline "$err")"
		return 1
	fi
}

# time_cell W S: time CMD (set for W on S) with hyperfine, or with benchtool without it.
time_cell() {
	local w=$1 s=$2
	if command -v hyperfine >/dev/null; then
		local hf=$OUT/hyperfine.json
		rm -f "$hf"
		cell latency "$w" "$s" hyperfine_in_work "$hf"
		if [[ -s $hf ]]; then
			cell latency "$w" "$s" "$BT" hyperfine -out "$CELLS" -workload "$w" -system "$s" \
				-note "$NOTE" -json "$hf" -version "$(hyperfine --version)"
		fi
	else
		cell latency "$w" "$s" "$BT" time -out "$CELLS" -workload "$w" -system "$s" -note "$NOTE" \
			-dir "$WORK" -n "$RUNS" -warmup "$WARMUP" -- "${CMD[@]}"
	fi
}

# hyperfine_in_work FILE: hyperfine CMD (without a shell) in the granted directory.
hyperfine_in_work() {
	cd "$WORK" && hyperfine -N --style none --runs "$RUNS" --warmup "$WARMUP" --export-json "$1" \
		-- "$(printf '%q ' "${CMD[@]}")"
}

# session MODE WORKLOAD SECTION [FLAGS...]: callbench on one warm session.
session() {
	local mode=$1 w=$2 sec=$3
	shift 3
	cell "$sec" "$w" "airlock session" "$CB" -mode "$mode" -out "$CELLS" -dir "$WORK" \
		-records "$STATE" -workload "$w" "$@"
}

measure_latency() {
	local s w fn
	for s in "${SYSTEMS[@]}"; do
		clean_workdir
		log "latency: $s"
		if [[ $s == "airlock session" ]]; then
			for w in "${WORKLOADS[@]}"; do
				workload_call "$w"
				session latency "$w" latency -tool "$TOOL" -args "$ARGS" -n "$RUNS" \
					-warmup "$WARMUP" -note "warm: one session, Go API"
			done
			continue
		fi
		fn=$(system_fn "$s")
		if ! probe "$s"; then
			for w in "${WORKLOADS[@]}" burst50; do skip latency "$w" "$s" "$REASON"; done
			continue
		fi
		for w in "${WORKLOADS[@]}"; do
			NOTE=""
			if "$fn" "$w"; then
				time_cell "$w" "$s"
			elif [[ $REASON != "measured for read_file only" ]]; then
				skip latency "$w" "$s" "$REASON"
			fi
		done
	done
}

# measure_mcp: sequential read_file of the 4 KiB file through `airlock mcp`, through the
# reference MCP filesystem server and through the MCP floor (the Go SDK's server reading the
# file in-process: bench/cmd/mcpfloor), each driven by a real MCP client (the Go SDK's, over
# stdio), against cat spawned by that same client process, interleaved call by call in an
# order that turns each round: back to back, then each call after a 200 ms idle pause.
measure_mcp() {
	local servers=(-server "airlock mcp=$AIRLOCK mcp --records $STATE"
		-server "mcpfloor (Go SDK)=$PEERS/mcpfloor")
	clean_workdir
	log "mcp read_file: airlock mcp, cat, the MCP floor, the reference filesystem server"
	if ((SMOKE)); then
		skip latency mcp_read_file "server-filesystem (MCP)" "smoke run: peers installed by the bench (npm) are skipped"
		skip latency mcp_read_file_paused "server-filesystem (MCP)" "smoke run: peers installed by the bench (npm) are skipped"
	elif [[ -x $PEERS/node_modules/.bin/mcp-server-filesystem ]]; then
		servers+=(-server "server-filesystem (MCP)=$PEERS/node_modules/.bin/mcp-server-filesystem $WORK")
	else
		skip latency mcp_read_file "server-filesystem (MCP)" "not installed (npm install failed)"
		skip latency mcp_read_file_paused "server-filesystem (MCP)" "not installed (npm install failed)"
	fi
	cell latency mcp_read_file "airlock mcp" "$CB" -mode mcp -out "$CELLS" -dir "$WORK" \
		-workload mcp_read_file -file data.txt -n "$((RUNS * 5))" -warmup "$WARMUP" "${servers[@]}"
	log "mcp read_file, each call after a 200 ms pause"
	cell latency mcp_read_file_paused "airlock mcp" "$CB" -mode mcp -out "$CELLS" -dir "$WORK" \
		-workload mcp_read_file_paused -file data.txt -n "$RUNS" -warmup "$WARMUP" -pause 200ms "${servers[@]}"
	# The same through the official TypeScript SDK's client (the one most agents use), which
	# the reference server installed: node spawns cat too, so direct is node's spawn.
	local sdk=$PEERS/node_modules/@modelcontextprotocol/sdk w
	if ((SMOKE)); then
		for w in mcp_read_file_ts mcp_read_file_ts_paused; do
			skip latency "$w" "airlock mcp" "smoke run: the TypeScript SDK comes with the npm peers, which are skipped"
		done
		return
	elif [[ ! -f $sdk/package.json ]] || ! command -v node >/dev/null; then
		for w in mcp_read_file_ts mcp_read_file_ts_paused; do
			skip latency "$w" "airlock mcp" "the TypeScript SDK or node is not installed (npm install failed)"
		done
		return
	fi
	local ts=(-client ts -ts-script "$BENCH/tsclient/mcp_read.mjs" -ts-sdk "$sdk")
	log "mcp read_file, the TypeScript SDK's client"
	cell latency mcp_read_file_ts "airlock mcp" "$CB" -mode mcp "${ts[@]}" -out "$CELLS" -dir "$WORK" \
		-workload mcp_read_file_ts -file data.txt -n "$((RUNS * 5))" -warmup "$WARMUP" "${servers[@]}"
	log "mcp read_file, the TypeScript SDK's client, each call after a 200 ms pause"
	cell latency mcp_read_file_ts_paused "airlock mcp" "$CB" -mode mcp "${ts[@]}" -out "$CELLS" -dir "$WORK" \
		-workload mcp_read_file_ts_paused -file data.txt -n "$RUNS" -warmup "$WARMUP" -pause 200ms "${servers[@]}"
}

measure_bursts() {
	local s fn
	for s in "${SYSTEMS[@]}"; do
		[[ $s == "airlock call (unsandboxed)" ]] && continue
		clean_workdir
		log "burst of $BURST_N: $s"
		if [[ $s == "airlock session" ]]; then
			session burst burst50 latency -tool shell -args '{"command":"true"}' -c "$BURST_N" \
				-rounds "$BURST_ROUNDS" -warmup "$BURST_WARMUP" \
				-note "$BURST_N shell calls on one session, all admitted at once"
			continue
		fi
		fn=$(system_fn "$s")
		probe "$s" || continue # its skip row is already written
		NOTE=""
		"$fn" true
		cell latency burst50 "$s" "$BT" burst -out "$CELLS" -workload burst50 -system "$s" \
			-dir "$WORK" -c "$BURST_N" -rounds "$BURST_ROUNDS" -warmup "$BURST_WARMUP" \
			-note "$BURST_N processes" -- "${CMD[@]}"
	done
}

# rate SYSTEM WORKLOAD C: closed-loop throughput of CMD at concurrency C.
rate() {
	cell throughput "$2" "$1" "$BT" rate -out "$CELLS" -workload "$2" -system "$1" -dir "$WORK" \
		-c "$3" -d "$RATE_DUR" -note "$NOTE" -- "${CMD[@]}"
}

measure_throughput() {
	local c
	clean_workdir
	for c in 1 8; do
		log "throughput at concurrency $c"
		NOTE="" && sys_direct true && rate direct /bin/true "$c"
		NOTE="" && sys_airlock_exec true && rate "airlock exec" /bin/true "$c"
		NOTE="" && sys_airlock_call read_file && rate "airlock call" read_file "$c"
		session rate read_file throughput -c "$c" -d "$RATE_DUR" -note "warm: one session, Go API"
	done
}

# measure_egress: one download from a loopback HTTP server (benchtool serves it) by curl,
# directly, through a bare splicing relay (what relaying alone costs), through airlock exec's
# egress proxy and through srt's; the systems alternate within each round.
measure_egress() {
	local port=${EGRESS_PORT:-18091} mib=256 rounds=5
	((SMOKE)) && mib=16 rounds=1
	local w="-s -o /dev/null -w '%{size_download} %{speed_download}'"
	clean_workdir
	log "egress: $mib MiB downloads, $rounds rounds"
	if ! command -v curl >/dev/null; then
		for s in direct "airlock exec"; do skip egress download "$s" "curl is not installed"; done
		return
	fi
	printf '[paths]\nread_write = ["%s"]\n[network]\nprivate = ["127.0.0.1:%s"]\n' "$WORK" "$port" >"$PEERS/egress-grant.toml"
	local args=(-sys "direct=curl $w {url}" -note "direct=curl to the server"
		-sys "relay (splice)=curl $w {relay}" -note "relay (splice)=curl through a bare relay: accept, dial, io.Copy both ways (spliced), no policy"
		-sys "airlock exec=$(printf '%q' "$AIRLOCK") exec --records $(printf '%q' "$STATE") --grant $(printf '%q' "$PEERS/egress-grant.toml") -- curl -p $w {url}"
		-note "airlock exec=curl in the sandbox, CONNECT through the egress proxy (network.private names the server)")
	if ((SMOKE)); then
		skip egress download srt "smoke run: peers installed by the bench (npm) are skipped"
	elif [[ -x $PEERS/node_modules/.bin/srt ]]; then
		cat >"$PEERS/srt-egress.json" <<-EOF
			{"network": {"allowedDomains": ["127.0.0.1"], "deniedDomains": []},
			 "filesystem": {"denyRead": ["/root", "/home"], "allowRead": [], "allowWrite": ["$WORK"], "denyWrite": []}}
		EOF
		args+=(-sys "srt=env TMPDIR=$(printf '%q' "$PEERS/tmp") $(printf '%q' "$PEERS/node_modules/.bin/srt") --settings $(printf '%q' "$PEERS/srt-egress.json") -- curl --noproxy '' -p $w {url}"
			-note "srt=curl through srt's HTTP proxy (its no_proxy lists 127.0.0.1, so --noproxy '')")
	else
		skip egress download srt "not installed (npm install failed)"
	fi
	cell egress download "airlock exec" "$BT" egress -out "$CELLS" -dir "$WORK" -listen "127.0.0.1:$port" \
		-mib "$mib" -rounds "$rounds" "${args[@]}"
}

measure_memory() {
	local s fn
	for s in "${SYSTEMS[@]}"; do
		[[ $s == direct ]] && continue
		clean_workdir
		log "memory: $s"
		if [[ $s == "airlock session" ]]; then
			session mem sleep memory -inflight 16 \
				-note "16 shell calls (sleep) in flight; helpers: each sandbox's init and shell"
			continue
		fi
		fn=$(system_fn "$s")
		if ! probe "$s"; then
			skip memory sleep "$s" "$REASON"
			continue
		fi
		NOTE=""
		"$fn" sleep
		cell memory sleep "$s" "$BT" mem -out "$CELLS" -workload sleep -system "$s" -dir "$WORK" \
			-- "${CMD[@]}"
	done
}

versions() {
	local v
	VERSIONS="go: $(go env GOVERSION)"
	for v in bwrap firejail hyperfine; do
		command -v "$v" >/dev/null && VERSIONS+="; $v: $("$v" --version 2>/dev/null | head -1)"
	done
	VERSIONS+="; unshare: $(unshare --version | head -1)"
	if ((!SMOKE)); then
		[[ -x $PEERS/node_modules/.bin/srt ]] && VERSIONS+="; srt: $("$PEERS/node_modules/.bin/srt" --version)"
		[[ -x $PEERS/node_modules/.bin/codex ]] && VERSIONS+="; $("$PEERS/node_modules/.bin/codex" --version)"
		local fsjson=$PEERS/node_modules/@modelcontextprotocol/server-filesystem/package.json
		[[ -f $fsjson ]] && VERSIONS+="; server-filesystem: $(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$fsjson" | head -1)"
		local sdkjson=$PEERS/node_modules/@modelcontextprotocol/sdk/package.json
		[[ -f $sdkjson ]] && VERSIONS+="; TypeScript MCP SDK: $(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$sdkjson" | head -1); node: $(node --version)"
	fi
	return 0
}

report() {
	local sys
	sys=$(IFS=,; echo "${SYSTEMS[*]},airlock mcp,mcpfloor (Go SDK),server-filesystem (MCP),relay (splice)")
	"$BT" report -cells "$CELLS" -json "$OUT/results.json" -md "$OUT/results.md" -systems "$sys" \
		-meta "date=$(date -u '+%Y-%m-%d %H:%M UTC')" \
		-meta "command=bench/run.sh$(((SMOKE)) && echo " --smoke") --runs $RUNS${REV:+ --rev $REV}" \
		-meta "smoke=$SMOKE" \
		-meta "host=$(uname -srm), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))" \
		-meta "load average before → after=$LOAD_BEFORE → $(cut -d' ' -f1-3 /proc/loadavg)" \
		-meta "airlock=$BUILT, built with -ldflags='-s -w'; sandbox init: $("$AIRLOCK" doctor 2>&1 | sed -n 's/^separate init *//p' | tr -s ' ' | head -1)" \
		-meta "timed runs per cell=$RUNS after $WARMUP warm-up; bursts: $BURST_ROUNDS of $BURST_N after $BURST_WARMUP; throughput: $RATE_DUR per cell" \
		-meta "versions=$VERSIONS"
	rm -f "$OUT/hyperfine.json"
	log "wrote $OUT/results.md and $OUT/results.json"
}

main() {
	parse_args "$@"
	LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
	install_peers
	build
	make_workdir
	versions
	if [[ $ONLY == mcp ]]; then
		measure_mcp
	elif [[ $ONLY == egress ]]; then
		measure_egress
	elif [[ $ONLY == exec ]]; then
		measure_latency
		measure_bursts
		measure_memory
	else
		measure_latency
		measure_mcp
		measure_bursts
		measure_throughput
		measure_egress
		measure_memory
	fi
	report
}

main "$@"
