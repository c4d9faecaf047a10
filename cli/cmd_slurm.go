package cli

import (
	"context"

	"github.com/urfave/cli/v3"

	"github.com/plload/plload/deploy"
)

func slurmCommand() *cli.Command {
	return &cli.Command{
		Name:      "slurm",
		Usage:     "print an sbatch script that runs a scenario sharded with srun, then merges the shards",
		ArgsUsage: "SCENARIO.yaml --shards N",
		Flags: append(deployFlags(),
			&cli.StringFlag{Name: "partition", Usage: "the Slurm partition (default: the cluster's)"},
			&cli.StringFlag{Name: "time", Usage: "the job's time limit, `HH:MM:SS` (default: 1.25× the scenario's planned length + 10 min)"},
		),
		Description: "Prints a script for sbatch: #SBATCH --ntasks=N with CPUs and memory per task sized from the\n" +
			"scenario, the resolved scenario written into the job's own results folder (<name>-<jobid>), plload\n" +
			"coordinate on the first node on a port the system picks (the job fails at once if it does not\n" +
			"start), one srun of plload run --shard auto (SLURM_PROCID/SLURM_NTASKS), then plload merge.\n" +
			"Submit it with PLLOAD_TOKEN set to a shared secret.",
		Action: func(_ context.Context, cmd *cli.Command) error {
			o := deploy.SlurmOptions{Partition: cmd.String("partition"), Time: cmd.String("time")}
			if err := o.Check(); err != nil {
				return badInput("slurm: %v", err)
			}
			p, err := deployPlan(cmd)
			if err != nil {
				return err
			}
			script, err := deploy.SlurmScript(p, o)
			if err != nil {
				return badInput("slurm: %v", err)
			}
			_, err = cmd.Root().Writer.Write(script)
			return err
		},
	}
}
