package dsn_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sqlstreams/sqlstreams/contrib/dsn"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// The database comes from configuration: SQLite in development, PostgreSQL
// in production, with the same code.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "dsn-example-")
	defer os.RemoveAll(dir)
	url := os.Getenv("APP_DATABASE_URL")
	if url == "" {
		url = "sqlite:" + filepath.Join(dir, "dev.db")
	}
	drv, err := dsn.Open(url)
	if err != nil {
		fmt.Println(err)
		return
	}
	client, err := sqlstreams.Open(context.Background(), drv)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	fmt.Println(client.Driver().Name())
	// Output: sqlite
}

func ExampleParse() {
	t, _ := dsn.Parse("mysql://app:secret@db.internal:3306/orders?parseTime=true")
	fmt.Println(t.Driver, t.DSN)
	// Output: mysql app:secret@tcp(db.internal:3306)/orders?parseTime=true
}

func ExampleForName() {
	drv, _ := dsn.ForName("postgres")
	defer drv.Close()
	ms, _ := drv.Migrations()
	fmt.Println(ms[0].Version)
	// Output: 1
}

func ExampleNames() {
	fmt.Println(dsn.Names())
	// Output: [postgres mysql sqlite]
}

func ExampleTarget_Open() {
	t, err := dsn.Parse("sqlite:" + filepath.Join(os.TempDir(), "dsn-example.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	drv := t.Open()
	defer drv.Close()
	fmt.Println(drv.Name())
	// Output: sqlite
}
