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

// Subscribe implements driver.Notifier. Every commit on the file, by any
// process, writes the write-ahead log (the driver opens the file in WAL
// mode), so a watch on the log, and on the file (a checkpoint, or a journal
// mode set by hand), wakes across processes without a server. It cannot
// tell streams apart: a wake-up is a hint, and one that finds nothing costs
// a claim. A driver's subscribers share one watch (an inotify instance each
// could exhaust the user's limit). An in-memory database (which no other
// process can open) or a driver opened WithoutNotify wakes nobody.
func (d *Driver) Subscribe(ctx context.Context, p driver.SubscribeParams) error {
	if err := d.check(); err != nil {
		return err
	}
	file, ok := databaseFile(d.path)
	if !ok || d.noNotify {
		<-ctx.Done()
		return nil
	}
	s, _ := d.watching.Join(file, p)
	defer d.watching.Leave(file, s)
	select {
	case <-ctx.Done():
		return nil
	case <-s.Lead():
	}
	w, err := fsnotify.NewWatcher()
	if err == nil {
		defer w.Close()
		// The directory, not the log: SQLite removes the log when the last
		// connection closes and makes it again on the next write.
		err = w.Add(filepath.Dir(file))
	}
	if err != nil {
		return fmt.Errorf("sqlite: watch %s for appends: %w", file, err)
	}
	// Rows appended before the watch began (or the one it takes over ended).
	d.watching.Wake(file)
	wal := file + "-wal"
	// A commit writes its last frame to the log a moment before the
	// wal-index (shared memory, which no watch sees) makes it visible, so a
	// claim woken by that write can be too early: a second wake-up, shortly
	// after the last write of a burst, catches it.
	const wakeAgainAfter = 2 * time.Millisecond
	again := time.NewTimer(time.Hour)
	again.Stop()
	defer again.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-again.C:
			d.watching.Wake(file)
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if (ev.Name == wal || ev.Name == file) && ev.Has(fsnotify.Write|fsnotify.Create) {
				d.watching.Wake(file)
				again.Reset(wakeAgainAfter)
			}
		case _, ok := <-w.Errors:
			if !ok {
				return nil
			}
			// Events were dropped (the kernel's queue overflowed): one of
			// them may have been an append.
			d.watching.Wake(file)
		}
	}
}

// databaseFile is the absolute name of the file path opens, or false for
// an in-memory database. Open takes a file name or a "file:" URI, either
// with query parameters.
func databaseFile(path string) (string, bool) {
	name, _, _ := strings.Cut(strings.TrimPrefix(path, "file:"), "?")
	if inMemory(path) || name == "" || name == ":memory:" {
		return "", false
	}
	abs, err := filepath.Abs(name)
	return abs, err == nil
}

// inMemory reports whether path names an in-memory database, which has no
// file: Open shares its one connection with the readers, and Subscribe has
// no log to watch.
func inMemory(path string) bool {
	return path == ":memory:" || strings.Contains(path, "mode=memory")
}
