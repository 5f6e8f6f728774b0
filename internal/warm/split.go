package warm

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/innowarm/innowarm/internal/catalog"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/flavor"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// splitKind says how the first key column's values can be interpolated.
type splitKind int

const (
	splitNone splitKind = iota
	splitInteger
	splitDecimal
	splitTemporal
	splitText
	splitBinary
)

func kindOf(c *catalog.Column) splitKind {
	if c == nil || c.Generated {
		return splitNone
	}
	switch strings.ToLower(c.DataType) {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year":
		return splitInteger
	case "decimal", "numeric", "float", "double", "real":
		return splitDecimal
	case "date", "datetime", "timestamp":
		return splitTemporal
	case "char", "varchar":
		if strings.HasSuffix(c.Collation, "_bin") || c.Collation == "binary" {
			return splitBinary
		}
		return splitText
	case "binary", "varbinary":
		return splitBinary
	}
	return splitNone
}

// splitColumn is the column an index can be split on: its first key part, when whole
// (a prefix cannot bound an index-only scan) and of a type whose values can be interpolated.
func splitColumn(ix *catalog.Index) *catalog.Column {
	if ix.Hidden || len(ix.Columns) == 0 {
		return nil
	}
	first := ix.Columns[0]
	if first.SubPart != 0 || kindOf(first.Column) == splitNone {
		return nil
	}
	return first.Column
}

// splitRanges cuts the index of part p into up to n ranges of its first key column, from the
// column's MIN and MAX (read through the index: two short descents). Values between are
// interpolated; for text the server orders the boundaries in the column's collation, so the
// ranges neither overlap nor leave gaps.
func splitRanges(ctx context.Context, sess *connection.Session, srv flavor.Server, t *catalog.Table, p *catalog.Part, ix *catalog.Index, n int) ([]*KeyRange, error) {
	col := splitColumn(ix)
	if col == nil || n < 2 {
		return nil, nil
	}
	lo, hi, err := keyBounds(ctx, sess, srv, t, p, ix, col)
	if err != nil {
		return nil, fmt.Errorf("key range of %s.%s: %w", t.FullName(), ix.Name, err)
	}
	if !lo.Valid || !hi.Valid || lo.String == hi.String {
		return nil, nil
	}
	var bounds []any
	switch kindOf(col) {
	case splitInteger:
		bounds = intBounds(lo.String, hi.String, n)
	case splitDecimal:
		bounds = floatBounds(lo.String, hi.String, n)
	case splitTemporal:
		bounds = timeBounds(lo.String, hi.String, n)
	case splitText:
		var err error
		bounds, err = orderText(ctx, sess, col, textBounds(lo.String, hi.String, n))
		if err != nil {
			return nil, err
		}
	case splitBinary:
		bounds = bytesBounds([]byte(lo.String), []byte(hi.String), n)
	}
	if len(bounds) == 0 {
		return nil, nil
	}
	ranges := make([]*KeyRange, 0, len(bounds)+1)
	ranges = append(ranges, &KeyRange{High: bounds[0], IncludeNull: col.Nullable})
	for i := 1; i < len(bounds); i++ {
		ranges = append(ranges, &KeyRange{Low: bounds[i-1], High: bounds[i]})
	}
	ranges = append(ranges, &KeyRange{Low: bounds[len(bounds)-1]})
	return ranges, nil
}

// keyBounds reads the least and the greatest non-NULL value of the index's first key
// column, col. MIN() and MAX() are two descents of an ascending key part, but through a
// descending one both servers read the whole index for them (MariaDB 10.11 and MySQL 9.7:
// every page of a KEY (c DESC, d), a --dry-run that loaded it and a --budget it overran):
// there the first entry in each direction is read instead (ORDER BY ... LIMIT 1, a descent
// each, forward and backward).
func keyBounds(ctx context.Context, sess *connection.Session, srv flavor.Server, t *catalog.Table, p *catalog.Part, ix *catalog.Index, col *catalog.Column) (lo, hi sql.NullString, err error) {
	qc := sqltext.Ident(col.Name)
	from := fromClause(srv, t, p, ix)
	if !ix.Columns[0].Desc {
		q := fmt.Sprintf("SELECT %s MIN(%s), MAX(%s) FROM %s", StatementTag, qc, qc, from)
		err = sess.QueryRow(ctx, srv.WithTimeLimit(q, 30*time.Second), nil, &lo, &hi)
		return lo, hi, err
	}
	first := func(order string, v *sql.NullString) error {
		q := fmt.Sprintf("SELECT %s %s FROM %s WHERE %s IS NOT NULL ORDER BY %s %s LIMIT 1", StatementTag, qc, from, qc, qc, order)
		err := sess.QueryRow(ctx, srv.WithTimeLimit(q, 30*time.Second), nil, v)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // no value: NULL, as MIN() of no rows
		}
		return err
	}
	if err = first("ASC", &lo); err == nil {
		err = first("DESC", &hi)
	}
	return lo, hi, err
}

// intBounds interpolates integers (big, so BIGINT UNSIGNED works) and drops duplicates.
func intBounds(los, his string, n int) []any {
	lo, ok1 := new(big.Int).SetString(los, 10)
	hi, ok2 := new(big.Int).SetString(his, 10)
	if !ok1 || !ok2 || lo.Cmp(hi) >= 0 {
		return nil
	}
	span := new(big.Int).Sub(hi, lo)
	var out []any
	var last *big.Int
	for i := 1; i < n; i++ {
		v := new(big.Int).Mul(span, big.NewInt(int64(i)))
		v.Quo(v, big.NewInt(int64(n)))
		v.Add(v, lo)
		if v.Cmp(lo) <= 0 || (last != nil && v.Cmp(last) <= 0) {
			continue
		}
		last = v
		out = append(out, v.String())
	}
	return out
}

func floatBounds(los, his string, n int) []any {
	lo, err1 := strconv.ParseFloat(los, 64)
	hi, err2 := strconv.ParseFloat(his, 64)
	if err1 != nil || err2 != nil || !(lo < hi) {
		return nil
	}
	var out []any
	for i := 1; i < n; i++ {
		out = append(out, strconv.FormatFloat(lo+(hi-lo)*float64(i)/float64(n), 'g', 17, 64))
	}
	return out
}

var timeLayouts = []string{"2006-01-02 15:04:05.999999", "2006-01-02 15:04:05", "2006-01-02"}

func timeBounds(los, his string, n int) []any {
	parse := func(s string) (time.Time, string, bool) {
		for _, l := range timeLayouts {
			if t, err := time.Parse(l, s); err == nil {
				return t, l, true
			}
		}
		return time.Time{}, "", false
	}
	lo, layout, ok1 := parse(los)
	hi, _, ok2 := parse(his)
	if !ok1 || !ok2 || !lo.Before(hi) {
		return nil
	}
	if layout != "2006-01-02" {
		layout = "2006-01-02 15:04:05"
	}
	var out []any
	last := ""
	for i := 1; i < n; i++ {
		v := lo.Add(time.Duration(float64(hi.Sub(lo)) * float64(i) / float64(n))).Format(layout)
		if v != last && v > los {
			out = append(out, v)
			last = v
		}
	}
	return out
}

// textDigits and textBase: text is interpolated on its first four characters after the
// common prefix, read as base-65536 digits (the Basic Multilingual Plane).
const (
	textDigits = 4
	textBase   = 1 << 16
)

func textBounds(lo, hi string, n int) []string {
	l, h := []rune(lo), []rune(hi)
	cp := 0
	for cp < len(l) && cp < len(h) && l[cp] == h[cp] {
		cp++
	}
	toNum := func(rs []rune) *big.Int {
		v := new(big.Int)
		for i := 0; i < textDigits; i++ {
			d := int64(0)
			if i < len(rs) {
				d = int64(min(rs[i], textBase-1))
			}
			v.Mul(v, big.NewInt(textBase))
			v.Add(v, big.NewInt(d))
		}
		return v
	}
	a, b := toNum(l[cp:]), toNum(h[cp:])
	if a.Cmp(b) >= 0 {
		return nil
	}
	span := new(big.Int).Sub(b, a)
	prefix := string(l[:cp])
	var out []string
	for i := 1; i < n; i++ {
		v := new(big.Int).Mul(span, big.NewInt(int64(i)))
		v.Quo(v, big.NewInt(int64(n)))
		v.Add(v, a)
		digits := make([]rune, textDigits)
		for j := textDigits - 1; j >= 0; j-- {
			m := new(big.Int)
			v.DivMod(v, big.NewInt(textBase), m)
			r := rune(m.Int64())
			if r >= 0xD800 && r <= 0xDFFF {
				r = 0xE000 // no surrogates in valid text
			}
			digits[j] = r
		}
		for len(digits) > 0 && digits[len(digits)-1] == 0 {
			digits = digits[:len(digits)-1]
		}
		s := prefix + string(digits)
		if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 && s > lo {
			out = append(out, s)
		}
	}
	return out
}

func bytesBounds(lo, hi []byte, n int) []any {
	width := 8
	pad := func(b []byte) *big.Int {
		buf := make([]byte, width)
		copy(buf, b)
		return new(big.Int).SetBytes(buf)
	}
	l, h := pad(lo), pad(hi)
	if l.Cmp(h) >= 0 {
		return nil
	}
	span := new(big.Int).Sub(h, l)
	var out []any
	var last []byte
	for i := 1; i < n; i++ {
		v := new(big.Int).Mul(span, big.NewInt(int64(i)))
		v.Quo(v, big.NewInt(int64(n)))
		v.Add(v, l)
		b := v.FillBytes(make([]byte, width))
		for len(b) > 1 && b[len(b)-1] == 0 {
			b = b[:len(b)-1]
		}
		if last != nil && string(b) <= string(last) {
			continue
		}
		last = b
		out = append(out, b)
	}
	return out
}

// orderText sorts and de-duplicates text boundaries in the column's own collation, on the
// server, since code-point order is not collation order.
func orderText(ctx context.Context, sess *connection.Session, col *catalog.Column, bounds []string) ([]any, error) {
	if len(bounds) == 0 {
		return nil, nil
	}
	coll := col.Collation
	charset, _, _ := strings.Cut(coll, "_")
	if coll == "" || charset == "" {
		out := make([]any, len(bounds))
		for i, b := range bounds {
			out[i] = b
		}
		return out, nil
	}
	parts := make([]string, len(bounds))
	args := make([]any, len(bounds))
	for i, b := range bounds {
		parts[i] = fmt.Sprintf("SELECT CONVERT(? USING %s) COLLATE %s AS b", charset, coll)
		args[i] = b
	}
	q := "SELECT " + StatementTag + " b FROM (" + strings.Join(parts, " UNION ") + ") AS bounds ORDER BY b"
	var out []any
	err := sess.Query(ctx, q, args, func(rows *sql.Rows) error {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("order key boundaries in %s: %w", coll, err)
	}
	return out, nil
}
