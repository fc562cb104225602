package mysql

import "context"

// Marks reads what the driver's watch of a stream reads (notify.go).
func Marks(ctx context.Context, d *Driver, streamID int64) (int64, error) {
	return d.marks(ctx, streamID)
}
