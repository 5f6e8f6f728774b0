package cli

import (
	"encoding"
	"encoding/json"
	"io"
	"reflect"
)

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(emptyNotNull(v))
}

// printJSONLine writes v as one line of JSON (a stream of objects, one per round).
func printJSONLine(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(emptyNotNull(v))
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// emptyNotNull is a copy of v in which every nil slice is empty and every nil map has no
// keys: a script reads "rows": [] rather than null when there are none, and need not
// test for both (encoding/json writes nil as null; its v2, which does not, is still an
// experiment in Go 1.26). v itself is left as it was; values that marshal themselves are
// left to do so.
func emptyNotNull(v any) any {
	if v == nil {
		return nil
	}
	return normalize(reflect.ValueOf(v)).Interface()
}

func normalize(v reflect.Value) reflect.Value {
	t := v.Type()
	if t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
		reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return v
	}
	switch t.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(normalize(v.Elem()))
		return p
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(t).Elem()
		out.Set(normalize(v.Elem()))
		return out
	case reflect.Struct:
		out := reflect.New(t).Elem()
		out.Set(v)
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				out.Field(i).Set(normalize(v.Field(i)))
			}
		}
		return out
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return v // []byte is a base64 string
		}
		out := reflect.MakeSlice(t, v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(normalize(v.Index(i)))
		}
		return out
	case reflect.Array:
		out := reflect.New(t).Elem()
		for i := range v.Len() {
			out.Index(i).Set(normalize(v.Index(i)))
		}
		return out
	case reflect.Map:
		out := reflect.MakeMapWithSize(t, v.Len())
		iter := v.MapRange()
		for iter.Next() {
			out.SetMapIndex(iter.Key(), normalize(iter.Value()))
		}
		return out
	}
	return v
}
