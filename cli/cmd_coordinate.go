package cli

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v3"

	"github.com/plload/plload/cluster"
)

func coordinateCommand() *cli.Command {
	return &cli.Command{
		Name:  "coordinate",
		Usage: "the rendezvous of a sharded run: one start and one clock for N shards (no load, no records)",
		Description: "Shards started with plload run --shard i/N --coordinator HOST:PORT join here. The coordinator\n" +
			"measures each shard's clock offset (NTP-style, the least-RTT of 16 rounds), then at every stage\n" +
			"waits until all N have arrived and sends one start instant, so stage boundaries are the same\n" +
			"instants on every shard. A shard with another scenario (sha256 of the resolved scenario without\n" +
			"output.*), another count, an index already taken or the wrong token is refused. Every wait is\n" +
			"bounded by --join-timeout: a shard that does not join, or does not reach a stage, fails the run\n" +
			"with its index named. Binds loopback unless --listen names another address, which requires\n" +
			"--token-env (the shards pass the same). Exit 0 when every shard finished, 1 when one was\n" +
			"missing, 2 on bad flags, 130 interrupted.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "shards", Usage: "N, the number of shards that must join (required)"},
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:7070", Usage: "listen address (host:port); beyond loopback it requires --token-env"},
			&cli.StringFlag{Name: "token-env", Usage: "the environment variable holding the shared secret shards must send (never logged)"},
			&cli.DurationFlag{Name: "join-timeout", Value: cluster.DefaultJoinTimeout, Usage: "how long to wait for every shard to join, and at each stage's barrier"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() > 0 {
				return badInput("coordinate takes no arguments (got %q); see plload coordinate --help", cmd.Args().First())
			}
			opts, err := coordinateOptions(cmd, os.Getenv)
			if err != nil {
				return err
			}
			opts.Log = slog.New(slog.NewTextHandler(cmd.Root().ErrWriter, nil))
			ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			c, err := cluster.Start(ctx, opts)
			if err != nil {
				return badInput("%v", err)
			}
			if err := c.Wait(); err != nil {
				if ctx.Err() != nil {
					return exitErr(exitInterrupted, err)
				}
				return exitErr(exitFailed, err)
			}
			return nil
		},
	}
}

// coordinateOptions checks the flags (exit 2 on any error) before anything binds.
func coordinateOptions(cmd *cli.Command, getenv func(string) string) (cluster.ServeOptions, error) {
	o := cluster.ServeOptions{Listen: cmd.String("listen"), Shards: cmd.Int("shards"), JoinTimeout: cmd.Duration("join-timeout")}
	if o.Shards < 1 {
		return o, badInput("coordinate: --shards %d; accepted: the number of shards, at least 1 (plload run --shard i/N on each)", o.Shards)
	}
	if o.JoinTimeout <= 0 {
		return o, badInput("coordinate: --join-timeout %s; accepted: a positive duration such as 60s", o.JoinTimeout)
	}
	tok, err := cluster.TokenFromEnv(cmd.String("token-env"), getenv)
	if err != nil {
		return o, badInput("coordinate: %v", err)
	}
	o.Token = tok
	if !cluster.IsLoopback(o.Listen) && o.Token == "" {
		return o, badInput("coordinate: --listen %s is beyond loopback and requires a shared secret; accepted: --token-env VAR (the shards pass the same), or a loopback address such as 127.0.0.1:7070", o.Listen)
	}
	return o, nil
}
