package cli

import (
	"encoding/json"
	"testing"
	"time"
)

type inner struct {
	Names []string       `json:"names"`
	Count map[string]int `json:"count"`
}

type outer struct {
	List    []int             `json:"list"`
	Kept    []int             `json:"kept,omitempty"`
	Inner   *inner            `json:"inner"`
	Inners  []inner           `json:"inners"`
	Any     any               `json:"any"`
	Map     map[string]any    `json:"map"`
	When    time.Time         `json:"when"`
	Raw     json.RawMessage   `json:"raw"`
	Nothing *inner            `json:"nothing"`
	ByName  map[string]*inner `json:"by_name"`
	hidden  []int
}

// Every nil slice and map in a value printed as JSON comes out empty, at any depth, through
// pointers, interfaces and maps; scalars that mean "unknown" (a nil pointer) stay null; the
// value itself is not changed.
func TestEmptyNotNull(t *testing.T) {
	v := outer{Inner: &inner{}, Inners: []inner{{}}, Any: inner{}, Map: map[string]any{"x": []string(nil)},
		Raw: json.RawMessage(`{"a":1}`), ByName: map[string]*inner{"k": {}}, hidden: []int{1}}
	b, err := json.Marshal(emptyNotNull(v))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"list":[],"inner":{"names":[],"count":{}},"inners":[{"names":[],"count":{}}],"any":{"names":[],"count":{}},` +
		`"map":{"x":[]},"when":"0001-01-01T00:00:00Z","raw":{"a":1},"nothing":null,"by_name":{"k":{"names":[],"count":{}}}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	if v.List != nil || v.Inner.Names != nil || v.Map["x"].([]string) != nil || len(v.hidden) != 1 {
		t.Errorf("the value itself was changed: %+v", v)
	}
	if b, _ := json.Marshal(emptyNotNull(nil)); string(b) != "null" {
		t.Errorf("nil: %s", b)
	}
}
