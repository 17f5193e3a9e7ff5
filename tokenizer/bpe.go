package tokenizer

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// bpe is the BPE model of tokenizer.json.
type bpe struct {
	vocab        map[string]int
	merges       map[[2]int]merge
	unk          int // -1: none
	fuseUnk      bool
	byteFallback bool
	prefix       string // continuing_subword_prefix
	suffix       string // end_of_word_suffix
	ignoreMerges bool
}

type merge struct{ rank, id int }

type bpeJSON struct {
	Dropout                 *float64        `json:"dropout"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Vocab                   map[string]int  `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
}

func parseBPE(raw json.RawMessage) (*bpe, error) {
	var t typed
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if t.Type != "BPE" {
		return nil, fmt.Errorf("model %q is not supported (supported: BPE)", t.Type)
	}
	var m bpeJSON
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if m.Dropout != nil && *m.Dropout > 0 {
		return nil, fmt.Errorf("BPE dropout %g makes counts random; use a tokenizer.json without dropout", *m.Dropout)
	}
	b := &bpe{vocab: m.Vocab, merges: map[[2]int]merge{}, unk: -1, fuseUnk: m.FuseUnk,
		byteFallback: m.ByteFallback, ignoreMerges: m.IgnoreMerges}
	if m.ContinuingSubwordPrefix != nil {
		b.prefix = *m.ContinuingSubwordPrefix
	}
	if m.EndOfWordSuffix != nil {
		b.suffix = *m.EndOfWordSuffix
	}
	if m.UnkToken != nil {
		id, ok := m.Vocab[*m.UnkToken]
		if !ok {
			return nil, fmt.Errorf("model: unk_token %q is not in the vocab", *m.UnkToken)
		}
		b.unk = id
	}
	pairs, err := parseMerges(m.Merges)
	if err != nil {
		return nil, err
	}
	for rank, p := range pairs {
		a, ok1 := m.Vocab[p[0]]
		c, ok2 := m.Vocab[p[1]]
		id, ok3 := m.Vocab[p[0]+strings.TrimPrefix(p[1], b.prefix)]
		if !ok1 || !ok2 || !ok3 {
			return nil, fmt.Errorf("model: merge %d (%q %q) names a token not in the vocab", rank, p[0], p[1])
		}
		if _, dup := b.merges[[2]int{a, c}]; !dup {
			b.merges[[2]int{a, c}] = merge{rank, id}
		}
	}
	return b, nil
}

// parseMerges reads merges as pairs (["a", "b"]) or as strings ("a b").
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err == nil {
		return pairs, nil
	}
	var lines []string
	if err := json.Unmarshal(raw, &lines); err != nil {
		return nil, fmt.Errorf("model: merges are neither pairs nor strings: %w", err)
	}
	pairs = make([][2]string, len(lines))
	for i, l := range lines {
		a, c, ok := strings.Cut(l, " ")
		if !ok {
			return nil, fmt.Errorf("model: merge %d %q is not two tokens", i, l)
		}
		pairs[i] = [2]string{a, c}
	}
	return pairs, nil
}

// encode is the ids of one word: its characters (or byte tokens, or the
// unknown token) merged by rank, the lowest first and leftmost among
// equals.
func (b *bpe) encode(w string) []int {
	if b.ignoreMerges {
		if id, ok := b.vocab[w]; ok {
			return []int{id}
		}
	}
	var ids []int
	unk := false // an unknown token is pending (fused with the next unknowns)
	for i := 0; i < len(w); {
		_, n := utf8.DecodeRuneInString(w[i:])
		s := w[i : i+n]
		if i > 0 {
			s = b.prefix + s
		}
		if i+n == len(w) {
			s += b.suffix
		}
		i += n
		if id, ok := b.vocab[s]; ok {
			if unk {
				ids, unk = append(ids, b.unk), false
			}
			ids = append(ids, id)
			continue
		}
		if b.byteFallback {
			if bs, ok := b.bytes(s); ok {
				ids = append(ids, bs...) // as the Rust library, before a pending unknown
				continue
			}
		}
		if b.unk >= 0 {
			if unk && !b.fuseUnk {
				ids = append(ids, b.unk)
			}
			unk = true
		}
	}
	if unk {
		ids = append(ids, b.unk)
	}
	return b.mergeAll(ids)
}

func (b *bpe) bytes(s string) ([]int, bool) {
	out := make([]int, 0, len(s))
	for i := 0; i < len(s); i++ {
		id, ok := b.vocab[fmt.Sprintf("<0x%02X>", s[i])]
		if !ok {
			return nil, false
		}
		out = append(out, id)
	}
	return out, true
}

// mergeAll applies the merges to the symbols: repeatedly the pair of the
// lowest rank, leftmost among equals, as the Rust library's Word does.
func (b *bpe) mergeAll(ids []int) []int {
	if len(ids) < 2 {
		return ids
	}
	n := len(ids)
	sym := make([]int, n)
	prev := make([]int, n)
	next := make([]int, n)
	alive := make([]bool, n)
	for i := range ids {
		sym[i], prev[i], next[i], alive[i] = ids[i], i-1, i+1, true
	}
	next[n-1] = -1
	q := &mergeQueue{}
	for i := 0; i+1 < n; i++ {
		if m, ok := b.merges[[2]int{sym[i], sym[i+1]}]; ok {
			q.items = append(q.items, pending{pos: i, rank: m.rank, id: m.id})
		}
	}
	heap.Init(q)
	for q.Len() > 0 {
		top := heap.Pop(q).(pending)
		p := top.pos
		if !alive[p] || next[p] < 0 {
			continue
		}
		r := next[p]
		if m, ok := b.merges[[2]int{sym[p], sym[r]}]; !ok || m.id != top.id {
			continue // stale: a symbol of the pair was merged since
		}
		sym[p] = top.id
		alive[r] = false
		next[p] = next[r]
		if next[r] >= 0 {
			prev[next[r]] = p
		}
		if l := prev[p]; l >= 0 {
			if m, ok := b.merges[[2]int{sym[l], sym[p]}]; ok {
				heap.Push(q, pending{pos: l, rank: m.rank, id: m.id})
			}
		}
		if nr := next[p]; nr >= 0 {
			if m, ok := b.merges[[2]int{sym[p], sym[nr]}]; ok {
				heap.Push(q, pending{pos: p, rank: m.rank, id: m.id})
			}
		}
	}
	out := make([]int, 0, n)
	for i := 0; i >= 0; i = next[i] {
		out = append(out, sym[i])
	}
	return out
}

type pending struct{ pos, rank, id int }

type mergeQueue struct{ items []pending }

func (q *mergeQueue) Len() int { return len(q.items) }
func (q *mergeQueue) Less(i, j int) bool {
	a, c := q.items[i], q.items[j]
	return a.rank < c.rank || (a.rank == c.rank && a.pos < c.pos)
}
func (q *mergeQueue) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }
func (q *mergeQueue) Push(x any)    { q.items = append(q.items, x.(pending)) }
func (q *mergeQueue) Pop() any {
	it := q.items[len(q.items)-1]
	q.items = q.items[:len(q.items)-1]
	return it
}
