package console_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserTypedDiff walks the Avro and Protobuf diffs in Chromium: the
// default Avro diff is the breaking pair and names the field; choosing
// revisions 1 and 2 in the form shows the compatible pair; from the
// registry page a free subject's link and its compare link reach the
// Protobuf diff.
func TestBrowserTypedDiff(t *testing.T) {
	for _, tg := range engines()[:2] {
		t.Run(tg.Name, func(t *testing.T) {
			c := openTyped(t, tg)
			seedTypes(t, c)
			srv := serve(t, c, false).URL + prefix
			ctx := browser(t, 90*time.Second)

			if err := chromedp.Do(ctx, chromedp.Navigate(srv+"/streams/"+avroStream+"/schemas/1")); err != nil {
				t.Fatal(err)
			}
			if got := textOf(t, ctx, "problems"); !strings.Contains(got, "READER_FIELD_MISSING_DEFAULT_VALUE") || !strings.Contains(got, "cents") {
				t.Fatalf("problems of the default diff: %q", got)
			}
			if got := textOf(t, ctx, "type"); got != "AVRO" {
				t.Fatalf("type %q", got)
			}
			if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`select[name="a"]`), "1"),
				chromedp.SetValue(chromedp.CSS(`select[name="b"]`), "2")); err != nil {
				t.Fatal(err)
			}
			resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`form.inline button[type="submit"]`)))
			if err != nil || resp.Status != 200 {
				t.Fatalf("compare 1 and 2: %v %+v", err, resp)
			}
			if got := textOf(t, ctx, "compatible"); got != "compatible" {
				t.Fatalf("revisions 1 and 2: %q", got)
			}
			if got := textOf(t, ctx, "schema-b"); !strings.Contains(got, `"note"`) || strings.Contains(got, `"cents"`) {
				t.Fatalf("revision 2 shown as %q", got)
			}

			if err := chromedp.Do(ctx, chromedp.Navigate(srv+"/registry")); err != nil {
				t.Fatal(err)
			}
			if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`#free-subjects a[href$="/registry/subjects/`+protoSubject+`"]`))); err != nil {
				t.Fatal(err)
			}
			if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("compare"))); err != nil {
				t.Fatal(err)
			}
			if got := textOf(t, ctx, "problems"); strings.Count(got, "FIELD_SCALAR_KIND_CHANGED") != 2 || !strings.Contains(got, "cents") {
				t.Fatalf("problems of the protobuf diff: %q", got)
			}
			if got := textOf(t, ctx, "schema-a"); !strings.Contains(got, "int64 cents = 2;") {
				t.Fatalf("version 1 shown as %q", got)
			}
		})
	}
}
