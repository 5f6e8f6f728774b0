package bench

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"
)

// The event-loop clients (loop_linux.go) speak the few commands a benchmark sends
// themselves, on connections go-sql-driver has opened and authenticated: COM_QUERY,
// COM_STMT_PREPARE and COM_STMT_EXECUTE, whose answers they skip without decoding.
// https://mariadb.com/kb/en/clientserver-protocol/

const (
	comQuery       = 0x03
	comStmtPrepare = 0x16
	comStmtExecute = 0x17

	pktOK          = 0x00
	pktLocalInfile = 0xfb
	pktEOF         = 0xfe
	pktERR         = 0xff

	maxPacket = 1<<24 - 1

	capDeprecateEOF = 1 << 24 // CLIENT_DEPRECATE_EOF
	capMySQL        = 1 << 0  // CLIENT_MYSQL: when unset, MariaDB's extended capabilities follow
	extCacheMeta    = 1 << 4  // MARIADB_CLIENT_CACHE_METADATA

	statusMoreResults = 0x0008

	typeLongLong = 0x08
)

// caps are the capabilities a connection negotiated, read from the handshake response
// the driver sent (it sends the intersection of its and the server's).
type caps struct {
	known        bool
	deprecateEOF bool
	cacheMeta    bool
}

// sniffCaps reads the capabilities from a handshake response packet (header included).
func sniffCaps(pkt []byte) (caps, bool) {
	if len(pkt) < 4+32 || pkt[3] != 1 { // the handshake response is the client's packet 1
		return caps{}, false
	}
	c := binary.LittleEndian.Uint32(pkt[4:8])
	out := caps{known: true, deprecateEOF: c&capDeprecateEOF != 0}
	if c&capMySQL == 0 && len(pkt) >= 4+36 {
		out.cacheMeta = binary.LittleEndian.Uint32(pkt[4+28:4+32])&extCacheMeta != 0
	}
	return out, true
}

// appendCommand appends a command packet (split at 16 MiB as the protocol wants) to b.
func appendCommand(b []byte, cmd byte, payload string) []byte {
	// The command byte counts in the first packet's length.
	total := 1 + len(payload)
	seq := byte(0)
	first := true
	for {
		n := min(total, maxPacket)
		b = append(b, byte(n), byte(n>>8), byte(n>>16), seq)
		if first {
			b = append(b, cmd)
			b = append(b, payload[:n-1]...)
			payload = payload[n-1:]
			first = false
		} else {
			b = append(b, payload[:n]...)
			payload = payload[n:]
		}
		total -= n
		seq++
		if n < maxPacket {
			return b
		}
	}
}

// appendExecute appends COM_STMT_EXECUTE with integer parameters.
func appendExecute(b []byte, id uint32, args []int64) []byte {
	n := len(args)
	size := 1 + 4 + 1 + 4
	if n > 0 {
		size += (n+7)/8 + 1 + 2*n + 8*n
	}
	b = append(b, byte(size), byte(size>>8), byte(size>>16), 0, comStmtExecute)
	b = binary.LittleEndian.AppendUint32(b, id)
	b = append(b, 0) // no cursor
	b = binary.LittleEndian.AppendUint32(b, 1)
	if n == 0 {
		return b
	}
	for i := 0; i < (n+7)/8; i++ {
		b = append(b, 0) // no NULLs
	}
	b = append(b, 1) // types follow
	for i := 0; i < n; i++ {
		b = append(b, typeLongLong, 0)
	}
	for _, a := range args {
		b = binary.LittleEndian.AppendUint64(b, uint64(a))
	}
	return b
}

// lenenc reads a length-encoded integer.
func lenenc(b []byte) (v uint64, n int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	switch b[0] {
	case 0xfc:
		if len(b) < 3 {
			return 0, 0, false
		}
		return uint64(binary.LittleEndian.Uint16(b[1:])), 3, true
	case 0xfd:
		if len(b) < 4 {
			return 0, 0, false
		}
		return uint64(b[1]) | uint64(b[2])<<8 | uint64(b[3])<<16, 4, true
	case 0xfe:
		if len(b) < 9 {
			return 0, 0, false
		}
		return binary.LittleEndian.Uint64(b[1:]), 9, true
	case 0xfb, 0xff:
		return 0, 1, false
	}
	return uint64(b[0]), 1, true
}

var errMalformed = errors.New("malformed packet from the server")

// okStatus reads the status flags of an OK packet, or of an EOF-marked OK packet.
func okStatus(p []byte) (uint16, error) {
	_, n1, ok1 := lenenc(p[1:])
	if !ok1 {
		return 0, errMalformed
	}
	_, n2, ok2 := lenenc(p[1+n1:])
	if !ok2 || len(p) < 1+n1+n2+2 {
		return 0, errMalformed
	}
	return binary.LittleEndian.Uint16(p[1+n1+n2:]), nil
}

// serverError reads an ERR packet.
func serverError(p []byte) error {
	if len(p) < 3 {
		return errMalformed
	}
	e := &mysql.MySQLError{Number: binary.LittleEndian.Uint16(p[1:3])}
	msg := p[3:]
	if len(msg) >= 6 && msg[0] == '#' {
		copy(e.SQLState[:], msg[1:6])
		msg = msg[6:]
	}
	e.Message = string(msg)
	return e
}

// Parser states.
const (
	stHeader  = iota // the first packet of a result
	stColumns        // column definitions
	stColEOF         // the EOF after them (without CLIENT_DEPRECATE_EOF)
	stRows           // rows until EOF/OK
	stDone
)

// respParser follows one command's answer packet by packet without decoding rows.
type respParser struct {
	caps   caps
	state  int
	cols   uint64
	cont   bool  // the next packet continues a 16 MiB one
	seq    byte  // sequence id of the last packet
	err    error // the server's error, or a protocol error
	infile bool  // the server asked for a LOCAL INFILE: answer with an empty packet
}

func (r *respParser) reset() {
	*r = respParser{caps: r.caps}
}

// feed consumes the complete packets at the start of buf and reports how many bytes it
// used and whether the answer is complete (r.err then holds a failure).
func (r *respParser) feed(buf []byte) (used int, done bool) {
	for len(buf)-used >= 4 {
		n := int(buf[used]) | int(buf[used+1])<<8 | int(buf[used+2])<<16
		if len(buf)-used < 4+n {
			return used, false
		}
		r.seq = buf[used+3]
		p := buf[used+4 : used+4+n]
		used += 4 + n
		cont := r.cont
		r.cont = n == maxPacket
		if cont {
			continue // the rest of a long row
		}
		if r.packet(p) {
			return used, true
		}
	}
	return used, false
}

// packet handles one packet; true when the answer is complete.
func (r *respParser) packet(p []byte) bool {
	if len(p) == 0 {
		r.err = errMalformed
		return true
	}
	switch r.state {
	case stHeader:
		switch p[0] {
		case pktOK:
			st, err := okStatus(p)
			if err != nil {
				r.err = err
				return true
			}
			return r.endResult(st)
		case pktERR:
			r.err = serverError(p)
			return true
		case pktLocalInfile:
			r.infile = true
			return false // the client answers, then the server sends OK or ERR
		}
		cols, n, ok := lenenc(p)
		if !ok {
			r.err = errMalformed
			return true
		}
		r.cols = cols
		if r.caps.cacheMeta && len(p) > n && p[n] == 0 {
			r.cols = 0 // metadata not resent: the client has it cached
		}
		switch {
		case r.cols > 0:
			r.state = stColumns
		case r.caps.deprecateEOF:
			r.state = stRows
		default:
			r.state = stColEOF
		}
	case stColumns:
		r.cols--
		if r.cols == 0 {
			if r.caps.deprecateEOF {
				r.state = stRows
			} else {
				r.state = stColEOF
			}
		}
	case stColEOF:
		if p[0] != pktEOF {
			r.err = fmt.Errorf("%w: want EOF after the column definitions", errMalformed)
			return true
		}
		r.state = stRows
	case stRows:
		switch {
		case p[0] == pktERR:
			r.err = serverError(p)
			return true
		case p[0] == pktEOF && len(p) < maxPacket:
			var st uint16
			if r.caps.deprecateEOF {
				s, err := okStatus(p)
				if err != nil {
					r.err = err
					return true
				}
				st = s
			} else if len(p) >= 5 {
				st = binary.LittleEndian.Uint16(p[3:5])
			}
			return r.endResult(st)
		}
	}
	return false
}

func (r *respParser) endResult(status uint16) bool {
	if status&statusMoreResults != 0 {
		r.state = stHeader
		return false
	}
	r.state = stDone
	return true
}

// prepareResp reads a COM_STMT_PREPARE answer: the statement id and parameter count, then
// as many packets as it announces.
type prepareResp struct {
	caps         caps
	id           uint32
	params, cols int
	left         int // definition packets still to come
	eofs         int // EOF packets still to come
	started      bool
	err          error
}

func (r *prepareResp) feed(buf []byte) (used int, done bool) {
	for len(buf)-used >= 4 {
		n := int(buf[used]) | int(buf[used+1])<<8 | int(buf[used+2])<<16
		if len(buf)-used < 4+n {
			return used, false
		}
		p := buf[used+4 : used+4+n]
		used += 4 + n
		if !r.started {
			r.started = true
			if len(p) > 0 && p[0] == pktERR {
				r.err = serverError(p)
				return used, true
			}
			if len(p) < 12 || p[0] != pktOK {
				r.err = errMalformed
				return used, true
			}
			r.id = binary.LittleEndian.Uint32(p[1:5])
			r.cols = int(binary.LittleEndian.Uint16(p[5:7]))
			r.params = int(binary.LittleEndian.Uint16(p[7:9]))
			r.left = r.cols + r.params
			if !r.caps.deprecateEOF {
				if r.cols > 0 {
					r.eofs++
				}
				if r.params > 0 {
					r.eofs++
				}
			}
		} else if r.left > 0 {
			r.left--
		} else {
			r.eofs--
		}
		if r.left == 0 && r.eofs == 0 {
			return used, true
		}
	}
	return used, false
}
