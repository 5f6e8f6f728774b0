package bench

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// pkt frames a payload as a protocol packet.
func pkt(seq byte, payload ...byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

func okPkt(seq byte, status uint16) []byte {
	return pkt(seq, 0x00, 0, 0, byte(status), byte(status>>8), 0, 0)
}

func eofOK(seq byte, status uint16) []byte { // CLIENT_DEPRECATE_EOF terminator
	return pkt(seq, 0xfe, 0, 0, byte(status), byte(status>>8), 0, 0)
}

func eof(seq byte, status uint16) []byte { // classic EOF
	return pkt(seq, 0xfe, 0, 0, byte(status), byte(status>>8))
}

func col(seq byte) []byte { return pkt(seq, append([]byte{3}, "def"...)...) }

func row(seq byte, vals ...string) []byte {
	var p []byte
	for _, v := range vals {
		p = append(p, byte(len(v)))
		p = append(p, v...)
	}
	return pkt(seq, p...)
}

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// feedAll gives the parser the stream in pieces of size chunk, as reads would.
func feedAll(t *testing.T, r *respParser, stream []byte, chunk int) (done bool, left int) {
	t.Helper()
	var buf []byte
	for off := 0; off < len(stream) && !done; off += chunk {
		buf = append(buf, stream[off:min(off+chunk, len(stream))]...)
		used, d := r.feed(buf)
		buf = buf[used:]
		done = d
	}
	return done, len(buf)
}

func TestRespParser(t *testing.T) {
	deprecate := caps{known: true, deprecateEOF: true}
	classic := caps{known: true}
	cases := []struct {
		name    string
		caps    caps
		stream  []byte
		wantErr string
	}{
		{"OK", deprecate, okPkt(1, 2), ""},
		{"ERR", deprecate, pkt(1, append([]byte{0xff, 0x7a, 0x04, '#', '4', '2', 'S', '0', '2'}, "Table 'x' doesn't exist"...)...), "1146"},
		{"rows, deprecate EOF", deprecate, concat(pkt(1, 2), col(2), col(3), row(4, "a", "b"), row(5, "c", "d"), eofOK(6, 2)), ""},
		{"rows, classic EOF", classic, concat(pkt(1, 2), col(2), col(3), eof(4, 2), row(5, "a", "b"), eof(6, 2)), ""},
		{"empty result, classic", classic, concat(pkt(1, 1), col(2), eof(3, 2), eof(4, 2)), ""},
		{"multi results", deprecate, concat(pkt(1, 1), col(2), row(3, "1"), eofOK(4, 2|statusMoreResults), okPkt(5, statusMoreResults), pkt(6, 1), col(7), row(8, "2"), eofOK(9, 2)), ""},
		{"error after rows", deprecate, concat(pkt(1, 1), col(2), row(3, "1"), pkt(4, 0xff, 0x25, 0x05, '#', '7', '0', '1', '0', '0', 'x')), "1317"},
		{"row starting with NULL", deprecate, concat(pkt(1, 1), col(2), pkt(3, 0xfb), eofOK(4, 2)), ""},
		{"cached metadata not resent", caps{known: true, deprecateEOF: true, cacheMeta: true}, concat(pkt(1, 2, 0), pkt(2, 0x00, 0x00, 0x01), eofOK(3, 2)), ""},
		{"metadata sent with cache capability", caps{known: true, deprecateEOF: true, cacheMeta: true}, concat(pkt(1, 1, 1), col(2), row(3, "x"), eofOK(4, 2)), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, chunk := range []int{1, 3, 7, 4096} {
				r := respParser{caps: c.caps}
				done, left := feedAll(t, &r, c.stream, chunk)
				if !done || left != 0 {
					t.Errorf("%s (chunks of %d): done %v, %d bytes left", c.name, chunk, done, left)
					continue
				}
				switch {
				case c.wantErr == "" && r.err != nil:
					t.Errorf("%s: unexpected error %v", c.name, r.err)
				case c.wantErr != "":
					var me *mysql.MySQLError
					if !errors.As(r.err, &me) || !strings.Contains(me.Error(), c.wantErr) {
						t.Errorf("%s: error %v, want %s", c.name, r.err, c.wantErr)
					}
				}
			}
		})
	}
}

func TestRespParserLongRows(t *testing.T) {
	// A row of 16 MiB - 1 bytes continues in the next packet, whose first byte (0xfe here)
	// must not be read as the end of the rows.
	long := make([]byte, maxPacket)
	long[0] = 0xfc
	stream := concat(pkt(1, 1), col(2), pkt(3, long...), pkt(4, 0xfe, 'x', 'y'), eofOK(5, 2))
	r := respParser{caps: caps{known: true, deprecateEOF: true}}
	done, left := feedAll(t, &r, stream, 1<<20)
	if !done || left != 0 || r.err != nil {
		t.Fatalf("done %v left %d err %v", done, left, r.err)
	}
}

func TestRespParserLocalInfile(t *testing.T) {
	r := respParser{caps: caps{known: true, deprecateEOF: true}}
	used, done := r.feed(pkt(1, append([]byte{0xfb}, "/etc/passwd"...)...))
	if done || !r.infile || r.seq != 1 || used == 0 {
		t.Fatalf("done %v infile %v seq %d", done, r.infile, r.seq)
	}
	r.infile = false
	if _, done := r.feed(pkt(3, 0xff, 0x94, 0x07, '#', '4', '2', '0', '0', '0', 'n', 'o')); !done || r.err == nil {
		t.Fatal("the server's answer to the declined file did not end the statement")
	}
}

func TestCommandPackets(t *testing.T) {
	b := appendCommand(nil, comQuery, "SELECT 1")
	if !bytes.Equal(b, pkt(0, append([]byte{comQuery}, "SELECT 1"...)...)) {
		t.Errorf("COM_QUERY %x", b)
	}
	// Long payloads are split at 16 MiB - 1, with an empty packet after an exact multiple.
	q := strings.Repeat("x", maxPacket-1) // command byte + q = exactly one full packet
	b = appendCommand(nil, comQuery, q)
	if len(b) != 4+maxPacket+4 || b[3] != 0 || b[4+maxPacket+3] != 1 || b[4+maxPacket] != 0 {
		t.Errorf("split: %d bytes", len(b))
	}
	b = appendExecute(nil, 7, []int64{42, -1})
	want := []byte{comStmtExecute, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, typeLongLong, 0, typeLongLong, 0}
	want = binary.LittleEndian.AppendUint64(want, 42)
	want = binary.LittleEndian.AppendUint64(want, ^uint64(0))
	if !bytes.Equal(b, pkt(0, want...)) {
		t.Errorf("COM_STMT_EXECUTE %x", b)
	}
}

func TestSniffCaps(t *testing.T) {
	hello := make([]byte, 4+64)
	hello[3] = 1
	binary.LittleEndian.PutUint32(hello[4:], capDeprecateEOF|1<<9) // no CLIENT_MYSQL: MariaDB's extension follows
	binary.LittleEndian.PutUint32(hello[4+28:], extCacheMeta)
	c, ok := sniffCaps(hello)
	if !ok || !c.deprecateEOF || !c.cacheMeta {
		t.Errorf("%+v %v", c, ok)
	}
	binary.LittleEndian.PutUint32(hello[4:], capMySQL)
	if c, ok := sniffCaps(hello); !ok || c.deprecateEOF || c.cacheMeta {
		t.Errorf("CLIENT_MYSQL: %+v %v", c, ok)
	}
	hello[3] = 0
	if _, ok := sniffCaps(hello); ok {
		t.Error("a packet 0 is no handshake response")
	}
}

func TestPrepareResp(t *testing.T) {
	stmtOK := func(id uint32, cols, params uint16) []byte {
		p := []byte{0x00}
		p = binary.LittleEndian.AppendUint32(p, id)
		p = binary.LittleEndian.AppendUint16(p, cols)
		p = binary.LittleEndian.AppendUint16(p, params)
		p = append(p, 0, 0, 0)
		return pkt(1, p...)
	}
	for _, c := range []struct {
		name   string
		caps   caps
		stream []byte
	}{
		{"deprecate EOF", caps{known: true, deprecateEOF: true}, concat(stmtOK(9, 1, 2), col(2), col(3), col(4))},
		{"classic EOF", caps{known: true}, concat(stmtOK(9, 1, 2), col(2), col(3), eof(4, 2), col(5), eof(6, 2))},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := prepareResp{caps: c.caps}
			used, done := r.feed(c.stream)
			if !done || used != len(c.stream) || r.id != 9 || r.params != 2 || r.err != nil {
				t.Errorf("caps %+v: done %v used %d/%d id %d params %d err %v", c.caps, done, used, len(c.stream), r.id, r.params, r.err)
			}
		})
	}
}
