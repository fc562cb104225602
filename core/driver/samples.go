package driver

import (
	"context"
	"time"
)

// SampleStore is implemented by drivers that keep samples of each stream's
// figures over time, so that an operator sees rates and lag move (the
// console's charts) without a metrics system of their own. It is optional,
// as ClientDirectory is: a driver without it still meets every delivery
// contract; maintenance then records nothing and Stream.History fails with
// ErrUnsupported.
type SampleStore interface {
	// RecordSample stores p.Sample unless a sample of the same stream at the
	// same At is stored already, and reports whether it stored it. Several
	// clients maintaining one database each try to record the same bucket;
	// the first one wins and the others change nothing.
	RecordSample(ctx context.Context, p RecordSampleParams) (bool, error)
	// ListSamples returns the stream's samples taken at or after p.Since,
	// ordered by At: the newest p.Limit of them when there are more.
	ListSamples(ctx context.Context, p ListSamplesParams) ([]Sample, error)
	// PruneSamples removes the samples taken before p.Before, and those of
	// streams that no longer exist, and returns how many it removed.
	PruneSamples(ctx context.Context, p PruneSamplesParams) (int64, error)
}

// Sample is one stream's figures at one time.
type Sample struct {
	StreamID int64
	// At is the start of the time bucket the sample stands for, in UTC,
	// to the microsecond.
	At time.Time
	// Figures is the JSON document package sqlstreams wrote; drivers store
	// it as it is and never read inside it.
	Figures string
}

// MaxSampleFigures bounds a sample's document, in bytes: a stream with very
// many groups and versions is sampled without its per-group rows rather
// than storing an unbounded document every minute.
const MaxSampleFigures = 64 << 10

// RecordSampleParams holds the sample to store.
type RecordSampleParams struct {
	Sample Sample
}

// ListSamplesParams selects a stream's samples; Limit is positive.
type ListSamplesParams struct {
	StreamID int64
	Since    time.Time
	Limit    int
}

// PruneSamplesParams bounds what PruneSamples removes.
type PruneSamplesParams struct {
	Before time.Time
}
