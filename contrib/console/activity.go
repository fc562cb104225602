package console

import (
	"fmt"
	"net/http"
	"time"

	"github.com/sqlstreams/sqlstreams/contrib/console/view"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// historyWindows are the spans the stream page's charts offer: the last
// hour, and the day the samples are kept by default.
var historyWindows = map[string]time.Duration{"1h": time.Hour, "24h": 24 * time.Hour}

// historyPage answers /api/streams/{s}/history?window=1h|24h, which the
// stream page's charts (static/charts.js) read and redraw every Options.ChartRefresh.
func (h *handler) historyPage(r *http.Request) (any, error) {
	window := r.URL.Query().Get("window")
	if window == "" {
		window = "1h"
	}
	span, ok := historyWindows[window]
	if !ok {
		return nil, fmt.Errorf("%w: window %q; use 1h or 24h", errBadRequest, window)
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	name := r.PathValue("stream")
	since := time.Now().UTC().Add(-span)
	points, err := h.client.Stream[sqlstreams.RawPayload](name).History(ctx, since)
	if err != nil {
		return nil, err
	}
	return view.HistoryOf(name, window, since, points), nil
}
