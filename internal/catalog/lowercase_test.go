package catalog_test

import (
	"context"
	"testing"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// On a server with lower_case_table_names = 1 (names kept in lower case, taken in any case
// from clients), -D, --tables and --exclude take any case, as the server does: before, -D
// MixedDB was "unknown database" and --tables 'mixeddb.OrderItems' matched nothing.
func TestLowerCaseTableNamesSelection(t *testing.T) {
	ctx := context.Background()
	sb := sandboxtest.SecondServer(t, 0, "--lower-case-table-names=1")
	conn, err := sb.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{
		"CREATE DATABASE MixedDB",
		"CREATE TABLE MixedDB.OrderItems (Id INT PRIMARY KEY, Val INT, KEY IdxVal (Val))",
		"CREATE TABLE MixedDB.Other (id INT PRIMARY KEY)",
	} {
		if _, err := conn.DB.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	pattern := func(s string) catalog.Pattern {
		p, err := catalog.ParsePattern(s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, f := range map[string]catalog.Filter{
		"-D MixedDB":                      {Schemas: []string{"MixedDB"}, Exclude: []catalog.Pattern{pattern("MIXEDDB.other")}},
		"--tables mixeddb.OrderItems":     {Tables: []catalog.Pattern{pattern("mixeddb.OrderItems")}},
		"--tables `MixedDB`.`OrderItems`": {Tables: []catalog.Pattern{pattern("`MixedDB`.`OrderItems`")}},
		"--tables MixedDB.Order*":         {Tables: []catalog.Pattern{pattern("MixedDB.Order*")}},
	} {
		cat, err := catalog.Load(ctx, conn, f)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(cat.Tables) != 1 || cat.Tables[0].Name != "orderitems" || cat.Tables[0].Schema != "mixeddb" {
			t.Errorf("%s: want mixeddb.orderitems alone, got %d tables %+v", name, len(cat.Tables), cat.Tables)
		}
	}
}
