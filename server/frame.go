package server

import (
	"encoding/binary"
	"fmt"
)

// Bounds on one request frame's structure. A request is a small map; these
// leave room for any real request and stop frames built to exhaust memory.
const (
	maxFrameDepth  = 32
	maxFrameValues = 1 << 20
)

// checkFrame walks a MessagePack frame without decoding it and rejects one
// whose declared lengths exceed the bytes it has, that nests deeper than
// maxFrameDepth, holds more than maxFrameValues values, or holds more than
// one top-level value. The MessagePack library allocates a declared array
// length before reading it (a 30-byte frame can ask for gigabytes) and
// recurses once per level, so every frame passes here first.
func checkFrame(data []byte) error {
	pos, values := 0, 0
	stack := make([]int, 1, 8) // values still to read, per open container
	stack[0] = 1
	for len(stack) > 0 {
		top := len(stack) - 1
		if stack[top] == 0 {
			stack = stack[:top]
			continue
		}
		stack[top]--
		if pos >= len(data) {
			return fmt.Errorf("frame ends in the middle of a value (offset %d)", pos)
		}
		values++
		if values > maxFrameValues {
			return fmt.Errorf("frame holds more than %d values", maxFrameValues)
		}
		c := data[pos]
		pos++
		var skip, children int
		var err error
		switch {
		case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
			// fixint, nil, bool: the code is the value
		case c >= 0x80 && c <= 0x8f:
			children = 2 * int(c&0x0f)
		case c >= 0x90 && c <= 0x9f:
			children = int(c & 0x0f)
		case c >= 0xa0 && c <= 0xbf:
			skip = int(c & 0x1f)
		case c == 0xc4 || c == 0xd9: // bin8, str8
			skip, pos, err = length(data, pos, 1)
		case c == 0xc5 || c == 0xda: // bin16, str16
			skip, pos, err = length(data, pos, 2)
		case c == 0xc6 || c == 0xdb: // bin32, str32
			skip, pos, err = length(data, pos, 4)
		case c == 0xc7: // ext8: length, type, data
			skip, pos, err = length(data, pos, 1)
			skip++
		case c == 0xc8:
			skip, pos, err = length(data, pos, 2)
			skip++
		case c == 0xc9:
			skip, pos, err = length(data, pos, 4)
			skip++
		case c == 0xca, c == 0xce, c == 0xd2: // float32, uint32, int32
			skip = 4
		case c == 0xcb, c == 0xcf, c == 0xd3: // float64, uint64, int64
			skip = 8
		case c == 0xcc, c == 0xd0:
			skip = 1
		case c == 0xcd, c == 0xd1:
			skip = 2
		case c >= 0xd4 && c <= 0xd8: // fixext 1, 2, 4, 8, 16 plus the type byte
			skip = 1 + 1<<(c-0xd4)
		case c == 0xdc:
			children, pos, err = length(data, pos, 2)
		case c == 0xdd:
			children, pos, err = length(data, pos, 4)
		case c == 0xde:
			children, pos, err = length(data, pos, 2)
			children *= 2
		case c == 0xdf:
			children, pos, err = length(data, pos, 4)
			children *= 2
		default: // 0xc1 is never used
			return fmt.Errorf("byte 0x%02x at offset %d is not a MessagePack type", c, pos-1)
		}
		if err != nil {
			return err
		}
		if skip > len(data)-pos {
			return fmt.Errorf("value at offset %d declares %d bytes but the frame has %d left", pos, skip, len(data)-pos)
		}
		pos += skip
		if children > 0 {
			// Every value takes at least one byte.
			if children > len(data)-pos {
				return fmt.Errorf("container at offset %d declares %d values but the frame has %d bytes left", pos, children, len(data)-pos)
			}
			if len(stack) >= maxFrameDepth {
				return fmt.Errorf("frame nests deeper than %d levels", maxFrameDepth)
			}
			stack = append(stack, children)
		}
	}
	if pos != len(data) {
		return fmt.Errorf("frame holds more than one MessagePack value; send one request per frame")
	}
	return nil
}

// length reads a big-endian length of size bytes at pos.
func length(data []byte, pos, size int) (int, int, error) {
	if len(data)-pos < size {
		return 0, pos, fmt.Errorf("frame ends inside a length field (offset %d)", pos)
	}
	var n uint64
	switch size {
	case 1:
		n = uint64(data[pos])
	case 2:
		n = uint64(binary.BigEndian.Uint16(data[pos:]))
	case 4:
		n = uint64(binary.BigEndian.Uint32(data[pos:]))
	}
	return int(n), pos + size, nil
}
