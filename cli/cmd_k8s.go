package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/plload/plload/deploy"
	"github.com/plload/plload/workload"
)

// deployFlags are the flags plload k8s and plload slurm share.
func deployFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "shards", Usage: "run the scenario as `N` shards (required)"},
		&cli.StringFlag{Name: "name", Usage: "name of every object and of the results folder (default: plload-<scenario name>)"},
	}
}

// deployPlan loads the scenario and sizes its shards, or returns an exit-2 error naming the flag.
func deployPlan(cmd *cli.Command) (*deploy.Plan, error) {
	if !cmd.IsSet("shards") {
		return nil, badInput("%s: --shards N is required (the number of shards, %d to %d)", cmd.Name, deploy.MinShards, deploy.MaxShards)
	}
	sc, warnings, err := loadScenario(cmd, workload.LoadOptions{})
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		fmt.Fprintf(cmd.Root().ErrWriter, "%s: %v\n", cmd.Name, w) // the issue says "warning:" itself
	}
	p, err := deploy.NewPlan(sc, deploy.Options{Shards: int(cmd.Int("shards")), Name: cmd.String("name")})
	if err != nil {
		return nil, badInput("%s: %v", cmd.Name, err)
	}
	return p, nil
}

func k8sCommand() *cli.Command {
	return &cli.Command{
		Name:      "k8s",
		Usage:     "print Kubernetes manifests that run a scenario sharded (an Indexed Job, its coordinator, the merge)",
		ArgsUsage: "SCENARIO.yaml --shards N --image IMG",
		Flags: append(deployFlags(),
			&cli.StringFlag{Name: "image", Usage: "the plload image (see the Dockerfile; required)"},
			&cli.StringFlag{Name: "namespace", Usage: "namespace of every object (default: kubectl's)"},
			&cli.StringFlag{Name: "results-pvc", Usage: "a ReadWriteMany PersistentVolumeClaim for the results (default: emptyDir, lost with each pod, and no merge)"},
			&cli.StringFlag{Name: "token-secret", Value: "plload-token", Usage: "the Secret whose key \"token\" is the coordinator's shared secret"},
			&cli.StringFlag{Name: "run-id", Usage: "the run's `ID` in every object's name and the results path, 1 to 8 lowercase letters and digits (default: the time, so each output is a new run)"},
			&cli.BoolFlag{Name: "allow-partial", Usage: "the merge Job merges what the shards left when one was lost (plload merge --allow-partial)"},
			&cli.StringFlag{Name: "image-pull-policy", Usage: "every container's imagePullPolicy: Always, IfNotPresent or Never (default: Kubernetes', Always for a :latest or untagged image, else IfNotPresent)"},
			&cli.StringFlag{Name: "results-init", Usage: "an `IMAGE` with sh, mkdir and chown (busybox): a root init container makes the run's directory on --results-pvc writable by uid 65532"},
		),
		Description: "Prints one YAML stream for kubectl apply -f -: the Namespace (with --namespace), a ConfigMap with the resolved scenario, a headless\n" +
			"Service and a one-pod Job for plload coordinate, an Indexed Job of N pods running\n" +
			"plload run --shard auto, each requesting CPU and memory for its share of the scenario's streams\n" +
			"(bench/README.md's per-chunk and per-session figures), and a suspended merge Job to resume when\n" +
			"the shards are done; its header prints a wait that ends when the shards' Job completes or fails.\n" +
			"Every object's name and the results path carry a run id, so applying a new output re-runs.\n" +
			"The token comes from a Secret reference, never inline.",
		Action: func(_ context.Context, cmd *cli.Command) error {
			o := deploy.K8sOptions{Image: cmd.String("image"), Namespace: cmd.String("namespace"),
				ResultsPVC: cmd.String("results-pvc"), TokenSecret: cmd.String("token-secret"),
				RunID: cmd.String("run-id"), AllowPartial: cmd.Bool("allow-partial"),
				PullPolicy: cmd.String("image-pull-policy"), ResultsInit: cmd.String("results-init")}
			if !cmd.IsSet("run-id") {
				o.RunID = deploy.RunID(time.Now())
			}
			if !cmd.IsSet("image") {
				return badInput("k8s: --image IMG is required (an image built from the Dockerfile)")
			}
			if err := o.Check(); err != nil {
				return badInput("k8s: %v", err)
			}
			p, err := deployPlan(cmd)
			if err != nil {
				return err
			}
			for _, f := range p.Files {
				fmt.Fprintf(cmd.Root().ErrWriter, "k8s: warning: the scenario reads %s; mount it at that path in the shard pods\n", f)
			}
			return deploy.WriteK8s(cmd.Root().Writer, p, o)
		},
	}
}
