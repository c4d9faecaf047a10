package deploy

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"text/template"
)

// SlurmOptions are `plload slurm`'s choices besides the plan.
type SlurmOptions struct {
	Partition string // "" leaves it to the cluster's default
	Time      string // "" derives a limit from the scenario's planned length
}

var (
	slurmTimeRE = regexp.MustCompile(`^(\d+-)?\d{1,3}:[0-5]\d:[0-5]\d$`)
	partitionRE = regexp.MustCompile(`^[A-Za-z0-9_.,-]+$`)
)

// Check refuses options sbatch would refuse (or that would break the script), naming the flag.
func (o SlurmOptions) Check() error {
	if o.Partition != "" && !partitionRE.MatchString(o.Partition) {
		return fmt.Errorf("--partition: %q is not a partition name; use letters, digits, '_', '.', '-' (a comma between several)", o.Partition)
	}
	if o.Time != "" && !slurmTimeRE.MatchString(o.Time) {
		return fmt.Errorf("--time: %q is not a time limit; give HH:MM:SS (or D-HH:MM:SS), such as 01:30:00", o.Time)
	}
	return nil
}

// scenarioEOF ends the here-document that carries the scenario; quoted, so nothing in it expands.
const scenarioEOF = "PLLOAD_SCENARIO_EOF"

// coordinatorStartSeconds bounds the script's wait for the coordinator's "listening" line: a
// coordinator that has not bound by then (a full disk, a missing binary) fails the job before srun.
const coordinatorStartSeconds = 30

// SlurmScript is an sbatch script for the plan: the coordinator in the background on the batch
// step's node (the allocation's first), the shards as one srun of N tasks, then the merge.
func SlurmScript(p *Plan, o SlurmOptions) ([]byte, error) {
	if bytes.Contains(p.Scenario, []byte(scenarioEOF)) {
		return nil, fmt.Errorf("the resolved scenario contains %q, which ends the script's here-document; rename what holds it", scenarioEOF)
	}
	limit := o.Time
	if limit == "" && p.Seconds > 0 {
		limit = slurmDuration(p.Seconds)
	}
	scenario := string(p.Scenario)
	if !strings.HasSuffix(scenario, "\n") {
		scenario += "\n"
	}
	// --mem-per-cpu rather than --mem: --mem is per node, wrong when a node holds several shards.
	cpus := p.Resources.CPUs()
	data := map[string]any{
		"P": p, "Partition": o.Partition, "Time": limit, "CPUs": cpus,
		"MemPerCPU":  int64(math.Ceil(float64(p.Resources.MemoryMiB) / float64(cpus))),
		"StartTries": coordinatorStartSeconds * 10, "StartSeconds": coordinatorStartSeconds, "TokenEnv": TokenEnv, "Scenario": scenario, "EOF": scenarioEOF,
	}
	var b bytes.Buffer
	if err := slurmTemplate.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("writing the sbatch script: %w", err)
	}
	return b.Bytes(), nil
}

// slurmDuration is a time limit for a run of s seconds: 1.25× it, plus 10 minutes for the join
// timeout, the dataset build and the merge, in whole minutes.
func slurmDuration(s float64) string {
	m := int(math.Ceil(s*1.25/60)) + 10
	return fmt.Sprintf("%02d:%02d:00", m/60, m%60)
}

var slurmTemplate = template.Must(template.New("sbatch").Funcs(template.FuncMap{"itoa": strconv.Itoa}).Parse(`#!/bin/bash
# plload slurm: {{.P.Name}} in {{.P.Shards}} shards of up to {{.P.StreamsPerShard}} streams and {{.P.SessionsPerShard}} open sessions each.
# Submit with PLLOAD_TOKEN set to a shared secret (the coordinator listens beyond loopback):
#   PLLOAD_TOKEN="$(openssl rand -hex 32)" sbatch {{.P.Name}}.sbatch
# A shard that fails leaves the others to run every stage; the merge then refuses the partial run
# unless PLLOAD_ALLOW_PARTIAL=1 was set at submission (the job still exits non-zero).
# Results: ${PLLOAD_RESULTS:-$SLURM_SUBMIT_DIR}/{{.P.Name}}-$SLURM_JOB_ID (on a filesystem every node
# sees; a requeued job adds .<restart count>)/shard-<i>/, merged into merged/; the coordinator's log
# is coordinator.log there. Each job has its own folder, so a re-run with the same name starts clean.
#SBATCH --job-name={{.P.Name}}
#SBATCH --ntasks={{.P.Shards}}
#SBATCH --cpus-per-task={{.CPUs}}
#SBATCH --mem-per-cpu={{.MemPerCPU}}M
#SBATCH --output={{.P.Name}}-%j.log
{{- if .Partition}}
#SBATCH --partition={{.Partition}}
{{- end}}
{{- if .Time}}
#SBATCH --time={{.Time}}
{{- end}}
set -uo pipefail
: "${ {{- .TokenEnv}}:?set {{.TokenEnv}} to a shared secret: the coordinator refuses shards without it}"
export {{.TokenEnv}}
{{- if .P.APIKeyEnv}}
: "${ {{- .P.APIKeyEnv}}:?set {{.P.APIKeyEnv}}, which target.api_key_env names}"
export {{.P.APIKeyEnv}}
{{- end}}
PLLOAD="${PLLOAD:-plload}"
run_id="$SLURM_JOB_ID"
if [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then
    run_id="$run_id.$SLURM_RESTART_COUNT"
fi
export RESULTS="${PLLOAD_RESULTS:-$SLURM_SUBMIT_DIR}/{{.P.Name}}-$run_id"
mkdir -p "$RESULTS" || exit 1
{{- range .P.Files}}
# The scenario reads {{.}}: every node must see it at that path.
{{- end}}
cat > "$RESULTS/scenario.yaml" <<'{{.EOF}}'
{{.Scenario}}{{.EOF}}

# The coordinator runs on the batch step's node, the allocation's first (task 0 runs there too), on
# a port the system picks, so two jobs on one node never share one; the shards dial the port it logs.
"$PLLOAD" coordinate --shards {{.P.Shards}} --listen 0.0.0.0:0 --token-env {{.TokenEnv}} 2> "$RESULTS/coordinator.log" &
coordinator=$!
trap 'kill "$coordinator" 2>/dev/null' EXIT
port=
for ((tries = 0; tries < {{.StartTries}}; tries++)); do
    port="$(sed -n 's/.*msg="coordinator listening" addr=[^ ]*:\([0-9][0-9]*\) .*/\1/p' "$RESULTS/coordinator.log")"
    if [ -n "$port" ] || ! kill -0 "$coordinator" 2>/dev/null; then
        break
    fi
    sleep 0.1
done
if [ -z "$port" ] || ! kill -0 "$coordinator" 2>/dev/null; then
    echo "plload: the coordinator did not start (it exited, or logged no listening address within {{.StartSeconds}} s), so no shard ran; its log, $RESULTS/coordinator.log:" >&2
    cat "$RESULTS/coordinator.log" >&2
    exit 1
fi
COORDINATOR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1):$port"

export PLLOAD COORDINATOR
srun --ntasks={{.P.Shards}} --kill-on-bad-exit=0 bash -c 'exec "$PLLOAD" run "$RESULTS/scenario.yaml" --shard auto --shards {{.P.Shards}} --coordinator "$COORDINATOR" --token-env {{.TokenEnv}} --out "$RESULTS/shard-$SLURM_PROCID"'
status=$?
kill "$coordinator" 2>/dev/null
wait "$coordinator" 2>/dev/null
allow_partial= # a word or nothing: bash before 4.4 calls an empty array unbound under set -u
if [ -n "${PLLOAD_ALLOW_PARTIAL:-}" ]; then
    allow_partial=--allow-partial
fi
if [ "$status" -ne 0 ]; then
    if [ -n "${PLLOAD_ALLOW_PARTIAL:-}" ]; then
        echo "plload: srun exited $status: a shard failed; PLLOAD_ALLOW_PARTIAL is set, so the merge keeps what the shards left" >&2
    else
        echo "plload: srun exited $status: a shard failed; the merge refuses the partial run. To keep it: $PLLOAD merge --allow-partial $RESULTS/shard-*/* --out $RESULTS/merged (or submit with PLLOAD_ALLOW_PARTIAL=1)" >&2
    fi
fi

"$PLLOAD" merge $allow_partial "$RESULTS"/shard-*/* --out "$RESULTS/merged" || exit $?
exit "$status"
`))
