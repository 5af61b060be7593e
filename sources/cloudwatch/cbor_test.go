package cloudwatch

// A minimal CBOR (RFC 8949) codec for the fake CloudWatch server. It is
// written here rather than borrowed from smithy-go so that the test checks
// the SDK's encoding against an independent reading of the format.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"testing"
	"time"
)

// cborTag is a tagged data item (major type 6), e.g. tag 1: epoch time.
type cborTag struct {
	Num uint64
	V   any
}

var errBreak = errors.New("cbor: unexpected break")

type cborDec struct {
	b   []byte
	off int
}

// cborDecode decodes one data item that must fill b. Maps become
// map[string]any, arrays []any, text string, bytes []byte, unsigned ints
// uint64, negative ints int64, floats float64, tags cborTag, null nil.
func cborDecode(b []byte) (any, error) {
	d := &cborDec{b: b}
	v, err := d.item()
	if err != nil {
		return nil, err
	}
	if d.off != len(b) {
		return nil, fmt.Errorf("cbor: %d trailing bytes", len(b)-d.off)
	}
	return v, nil
}

func (d *cborDec) need(n int) ([]byte, error) {
	if d.off+n > len(d.b) {
		return nil, io.ErrUnexpectedEOF
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p, nil
}

// head reads an initial byte and its argument.
func (d *cborDec) head() (major, info byte, arg uint64, err error) {
	p, err := d.need(1)
	if err != nil {
		return 0, 0, 0, err
	}
	major, info = p[0]>>5, p[0]&0x1f
	switch {
	case info < 24:
		arg = uint64(info)
	case info == 24:
		p, err = d.need(1)
		if err == nil {
			arg = uint64(p[0])
		}
	case info == 25:
		p, err = d.need(2)
		if err == nil {
			arg = uint64(binary.BigEndian.Uint16(p))
		}
	case info == 26:
		p, err = d.need(4)
		if err == nil {
			arg = uint64(binary.BigEndian.Uint32(p))
		}
	case info == 27:
		p, err = d.need(8)
		if err == nil {
			arg = binary.BigEndian.Uint64(p)
		}
	case info == 31:
		// indefinite length (or break); the caller decides
	default:
		err = fmt.Errorf("cbor: reserved additional info %d", info)
	}
	return major, info, arg, err
}

// atBreak consumes a break byte if it is next.
func (d *cborDec) atBreak() bool {
	if d.off < len(d.b) && d.b[d.off] == 0xff {
		d.off++
		return true
	}
	return false
}

func (d *cborDec) item() (any, error) {
	major, info, arg, err := d.head()
	if err != nil {
		return nil, err
	}
	indefinite := info == 31
	switch major {
	case 0:
		return arg, nil
	case 1:
		return -1 - int64(arg), nil
	case 2, 3:
		var buf []byte
		if indefinite {
			for !d.atBreak() {
				chunk, err := d.item()
				if err != nil {
					return nil, err
				}
				switch c := chunk.(type) {
				case []byte:
					buf = append(buf, c...)
				case string:
					buf = append(buf, c...)
				}
			}
		} else {
			p, err := d.need(int(arg))
			if err != nil {
				return nil, err
			}
			buf = append(buf, p...)
		}
		if major == 2 {
			return buf, nil
		}
		return string(buf), nil
	case 4:
		var out []any
		for i := uint64(0); indefinite || i < arg; i++ {
			if indefinite && d.atBreak() {
				break
			}
			v, err := d.item()
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case 5:
		out := map[string]any{}
		for i := uint64(0); indefinite || i < arg; i++ {
			if indefinite && d.atBreak() {
				break
			}
			k, err := d.item()
			if err != nil {
				return nil, err
			}
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("cbor: map key of type %T", k)
			}
			v, err := d.item()
			if err != nil {
				return nil, err
			}
			out[ks] = v
		}
		return out, nil
	case 6:
		v, err := d.item()
		if err != nil {
			return nil, err
		}
		return cborTag{Num: arg, V: v}, nil
	default: // 7
		switch info {
		case 20:
			return false, nil
		case 21:
			return true, nil
		case 22, 23:
			return nil, nil
		case 25:
			return half(uint16(arg)), nil
		case 26:
			return float64(math.Float32frombits(uint32(arg))), nil
		case 27:
			return math.Float64frombits(arg), nil
		case 31:
			return nil, errBreak
		}
		return nil, fmt.Errorf("cbor: simple value %d", info)
	}
}

// half converts an IEEE 754 half-precision float.
func half(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, frac := int(h>>10&0x1f), float64(h&0x3ff)
	switch exp {
	case 0:
		return sign * frac * math.Pow(2, -24)
	case 31:
		if frac == 0 {
			return math.Inf(int(sign))
		}
		return math.NaN()
	}
	return sign * (1 + frac/1024) * math.Pow(2, float64(exp-15))
}

// cborEncode encodes maps (keys sorted), slices, strings, numbers, bools,
// nil, cborTag and time.Time (tag 1, float64 epoch seconds, as rpcv2Cbor
// wants timestamps).
func cborEncode(v any) []byte {
	var b []byte
	var enc func(v any)
	head := func(major byte, arg uint64) {
		switch {
		case arg < 24:
			b = append(b, major<<5|byte(arg))
		case arg <= math.MaxUint8:
			b = append(b, major<<5|24, byte(arg))
		case arg <= math.MaxUint16:
			b = append(b, major<<5|25)
			b = binary.BigEndian.AppendUint16(b, uint16(arg))
		case arg <= math.MaxUint32:
			b = append(b, major<<5|26)
			b = binary.BigEndian.AppendUint32(b, uint32(arg))
		default:
			b = append(b, major<<5|27)
			b = binary.BigEndian.AppendUint64(b, arg)
		}
	}
	enc = func(v any) {
		switch v := v.(type) {
		case nil:
			b = append(b, 0xf6)
		case bool:
			if v {
				b = append(b, 0xf5)
			} else {
				b = append(b, 0xf4)
			}
		case int:
			if v >= 0 {
				head(0, uint64(v))
			} else {
				head(1, uint64(-1-v))
			}
		case uint64:
			head(0, v)
		case float64:
			b = append(b, 0xfb)
			b = binary.BigEndian.AppendUint64(b, math.Float64bits(v))
		case string:
			head(3, uint64(len(v)))
			b = append(b, v...)
		case []byte:
			head(2, uint64(len(v)))
			b = append(b, v...)
		case []any:
			head(4, uint64(len(v)))
			for _, e := range v {
				enc(e)
			}
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			head(5, uint64(len(v)))
			for _, k := range keys {
				enc(k)
				enc(v[k])
			}
		case cborTag:
			head(6, v.Num)
			enc(v.V)
		case time.Time:
			enc(cborTag{Num: 1, V: float64(v.UnixMilli()) / 1e3})
		default:
			panic(fmt.Sprintf("cborEncode: unsupported %T", v))
		}
	}
	enc(v)
	return b
}

// TestCBORCodec checks the test codec on RFC 8949 Appendix A examples, so a
// fake-server failure is not a codec bug.
func TestCBORCodec(t *testing.T) {
	tests := []struct {
		hex  string
		want any
	}{
		{"00", uint64(0)},
		{"1903e8", uint64(1000)},
		{"3863", int64(-100)},
		{"f93c00", 1.0},
		{"fa47c35000", 100000.0},
		{"fb3ff199999999999a", 1.1},
		{"6449455446", "IETF"},
		{"7f657374726561646d696e67ff", "streaming"},
		{"c11a514b67b0", cborTag{Num: 1, V: uint64(1363896240)}},
		{"9f018202039f0405ffff", []any{uint64(1), []any{uint64(2), uint64(3)}, []any{uint64(4), uint64(5)}}},
		{"bf61610161629f0203ffff", map[string]any{"a": uint64(1), "b": []any{uint64(2), uint64(3)}}},
		{"f6", nil},
	}
	for _, tt := range tests {
		var raw []byte
		for i := 0; i+1 < len(tt.hex); i += 2 {
			var x byte
			fmt.Sscanf(tt.hex[i:i+2], "%02x", &x)
			raw = append(raw, x)
		}
		got, err := cborDecode(raw)
		if err != nil {
			t.Errorf("%s: %v", tt.hex, err)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s = %#v, want %#v", tt.hex, got, tt.want)
		}
	}
	in := map[string]any{"s": "x", "n": 3, "f": 2.5, "l": []any{true, nil}, "t": time.UnixMilli(1795966440500)}
	back, err := cborDecode(cborEncode(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"s": "x", "n": uint64(3), "f": 2.5, "l": []any{true, nil}, "t": cborTag{Num: 1, V: 1795966440.5}}
	if fmt.Sprint(back) != fmt.Sprint(want) {
		t.Errorf("round trip = %v, want %v", back, want)
	}
}
