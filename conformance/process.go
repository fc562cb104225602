package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/sqlstreams/sqlstreams/conformance/proctest"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// childSpec tells a child process what to do.
type childSpec struct {
	Namespace   string
	Stream      string
	Group       string
	Out         string // file the child appends its records to
	Count       int
	Lease       time.Duration
	Concurrency int
	Batch       int
}

type childRole func(context.Context, *sqlstreams.Client, childSpec, *proctest.Recorder, Target) error

// childRoles are the parts of multi-process tests that run in children.
var childRoles = map[string]childRole{
	"claim-ack": childClaimAck,
	"produce":   childProduce,
	"consume":   childConsume,
	"ack-tx":    childAckTx,
	"drain":     childDrain,
}

func dispatchChildren(target Target) {
	roles := map[string]proctest.Role{}
	for name, role := range childRoles {
		roles[name] = func(ctx context.Context, raw json.RawMessage) int { return runChild(ctx, raw, role, target) }
	}
	proctest.Dispatch(roles)
}

func runChild(ctx context.Context, raw json.RawMessage, role childRole, target Target) int {
	var spec childSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		fmt.Fprintln(os.Stderr, "bad child spec:", err)
		return 2
	}
	return RunChild(ctx, target, spec.Namespace, spec.Out, func(ctx context.Context, c *sqlstreams.Client, rec *proctest.Recorder) error {
		return role(ctx, c, spec, rec, target)
	})
}

// RunChild is the body of a child process of a multi-process test: it opens
// a client on target's namespace (no background maintenance, warnings to
// stderr, where the parent looks for them), opens the record file out, and
// runs role until it returns or ctx ends (the parent's SIGTERM). It returns
// the process's exit code: 0, 1 when role failed, 2 when setting up failed.
// A stop requested through ctx is a clean stop at any instant, also while
// the child is still opening its client or registering: exit code 0.
func RunChild(ctx context.Context, target Target, namespace, out string, role func(context.Context, *sqlstreams.Client, *proctest.Recorder) error) int {
	fail := func(code int, what string, err error) int {
		fmt.Fprintln(os.Stderr, what+":", err)
		if ctx.Err() != nil {
			return 0 // asked to stop: whatever was under way ended with it
		}
		return code
	}
	drv, err := target.Open(namespace)
	if err != nil {
		return fail(2, "open driver", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	client, err := sqlstreams.Open(ctx, drv, sqlstreams.WithMaintenanceInterval(0), sqlstreams.WithLogger(logger))
	if err != nil {
		return fail(2, "open client", err)
	}
	defer client.Close()
	rec, err := proctest.OpenRecorder(out)
	if err != nil {
		return fail(2, "open records", err)
	}
	defer rec.Close()
	if err := role(ctx, client, rec); err != nil {
		return fail(1, "role", err)
	}
	return 0
}

// childClaimAck claims batches, records each delivery as it handles it,
// acks the batch and records the ack, until it is killed.
func childClaimAck(ctx context.Context, c *sqlstreams.Client, spec childSpec, rec *proctest.Recorder, _ Target) error {
	cons, err := c.Stream[EventV1](spec.Stream).Consumer(spec.Group).Register(ctx, &sqlstreams.ConsumerOptions{LeaseDuration: spec.Lease})
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		ds, err := cons.Claim(ctx, spec.Batch)
		if err != nil {
			return err
		}
		if len(ds) == 0 {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		for _, d := range ds {
			if err := rec.Record("got", d.ID, d.Attempt); err != nil {
				return err
			}
			time.Sleep(time.Millisecond) // the work
		}
		// "acking" before the ack and "acked" after it bracket the one window
		// in which a kill leaves the parent unsure whether the ack committed.
		for _, d := range ds {
			if err := rec.Record("acking", d.ID); err != nil {
				return err
			}
		}
		if err := cons.Ack(ctx, ds...); err != nil {
			return err
		}
		for _, d := range ds {
			if err := rec.Record("acked", d.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// childProduce produces Count events, alternating single produces and
// batches of ten, recording every id.
func childProduce(ctx context.Context, c *sqlstreams.Client, spec childSpec, rec *proctest.Recorder, _ Target) error {
	p, err := c.Stream[EventV1](spec.Stream).Producer().Register(ctx, nil)
	if err != nil {
		return err
	}
	for n := 0; n < spec.Count; {
		var ids []int64
		if n%20 == 0 && spec.Count-n >= 10 {
			msgs := make([]sqlstreams.Message[EventV1], 10)
			for i := range msgs {
				msgs[i] = sqlstreams.NewMessage(EventV1{Seq: n + i}, sqlstreams.Key(fmt.Sprintf("k%d-%d", os.Getpid(), n+i)))
			}
			if ids, err = p.ProduceBatch(ctx, msgs...); err != nil {
				return err
			}
		} else {
			id, err := p.Produce(ctx, EventV1{Seq: n}, sqlstreams.Key(fmt.Sprintf("k%d-%d", os.Getpid(), n)))
			if err != nil {
				return err
			}
			ids = []int64{id}
		}
		for _, id := range ids {
			if err := rec.Record("produced", id); err != nil {
				return err
			}
		}
		n += len(ids)
	}
	return nil
}

// childConsume runs a group member until SIGTERM, recording each handled id.
func childConsume(ctx context.Context, c *sqlstreams.Client, spec childSpec, rec *proctest.Recorder, _ Target) error {
	cons, err := c.Stream[EventV1](spec.Stream).Consumer(spec.Group).Register(ctx, &sqlstreams.ConsumerOptions{
		LeaseDuration: spec.Lease, Concurrency: spec.Concurrency, BatchSize: spec.Batch, PollInterval: 20 * time.Millisecond})
	if err != nil {
		return err
	}
	pid := strconv.Itoa(os.Getpid())
	if err := rec.Record("ready", 0, 0, pid); err != nil {
		return err
	}
	return cons.Run(ctx, func(ctx context.Context, d sqlstreams.Delivery[EventV1]) error {
		return rec.Record("handled", d.ID, d.Attempt, pid)
	})
}
