package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/sqlstreams/sqlstreams/core/driver"
)

// wakeAgainAfter is how long after a burst of writes to the log the
// subscriber is woken a second time (Subscribe).
const wakeAgainAfter = 2 * time.Millisecond

// Subscribe implements driver.Notifier. Every commit on the file, by any
// process, writes the write-ahead log (the driver opens the file in WAL
// mode), so a watch on the log is a wake-up across processes without a
// server: the subscriber is woken at each write of the log, and at each of
// the file (a checkpoint, or a journal mode set by hand). It cannot tell
// streams apart; a wake-up is only a hint, and one that finds nothing costs
// a claim. An in-memory database has no file and never wakes anyone (it has
// no other process to hear from either), nor does a driver opened
// WithoutNotify. Subscribe returns when ctx ends.
func (d *Driver) Subscribe(ctx context.Context, p driver.SubscribeParams) error {
	if err := d.check(); err != nil {
		return err
	}
	file, ok := databaseFile(d.path)
	if !ok || d.noNotify {
		<-ctx.Done()
		return nil
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("sqlite: watch %s for appends: %w", file, err)
	}
	defer w.Close()
	// The directory, not the log: SQLite removes the log when the last
	// connection closes and makes it again on the next write.
	if err := w.Add(filepath.Dir(file)); err != nil {
		return fmt.Errorf("sqlite: watch %s for appends: %w", file, err)
	}
	wal := file + "-wal"
	// A commit writes its last frame to the log a moment before the
	// wal-index (shared memory, which no watch sees) makes it visible, so a
	// claim woken by that write can be too early: a second wake-up, shortly
	// after the last write of a burst, catches it.
	again := time.NewTimer(time.Hour)
	again.Stop()
	defer again.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-again.C:
			p.Wake()
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if (ev.Name == wal || ev.Name == file) && ev.Has(fsnotify.Write|fsnotify.Create) {
				p.Wake()
				again.Reset(wakeAgainAfter)
			}
		case _, ok := <-w.Errors:
			if !ok {
				return nil
			}
			// Events were dropped (the kernel's queue overflowed): one of
			// them may have been an append.
			p.Wake()
		}
	}
}

// databaseFile is the absolute name of the file path opens, or false for
// an in-memory database. Open takes a file name or a "file:" URI, either
// with query parameters.
func databaseFile(path string) (string, bool) {
	if inMemory(path) {
		return "", false
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(path, "file:"), "?")
	if name == "" || name == ":memory:" {
		return "", false
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		return "", false
	}
	return abs, true
}

// inMemory reports whether path names an in-memory database, which has no
// file: Open shares its one connection with the readers, and Subscribe has
// no log to watch.
func inMemory(path string) bool {
	return path == ":memory:" || strings.Contains(path, "mode=memory")
}
