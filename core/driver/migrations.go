package driver

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// ReadMigrations lists the migrations embedded in dir of fsys, in version
// order: each is a file <version>_<what>.sql (its Up SQL) and, where going
// back is safe, <version>_<what>.down.sql. Each driver applies them in its
// own way (locks, transactions, statement splitting) and records each
// version once it is applied.
func ReadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	files, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	downs := map[string]string{}
	var out []Migration
	for _, f := range files {
		name := path.Base(f)
		body, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		if up, ok := strings.CutSuffix(name, ".down.sql"); ok {
			downs[up+".sql"] = string(body)
			continue
		}
		version, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
		if err != nil || version < 1 {
			return nil, fmt.Errorf("migration %s: the name must start with a version number and '_', like 0001_init.sql", name)
		}
		out = append(out, Migration{Version: version, Name: name, Up: string(body)})
	}
	for i := range out {
		out[i].Down = downs[out[i].Name]
		delete(downs, out[i].Name)
	}
	for name := range downs {
		return nil, fmt.Errorf("migration %s has a down file but no up file", name)
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("migrations %s and %s share version %d", out[i-1].Name, out[i].Name, out[i].Version)
		}
	}
	return out, nil
}
