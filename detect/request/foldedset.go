package request

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// A foldedSet answers set[strings.ToLower(s)] for a set of short ASCII
// strings without lowering s into a new string and hashing it: an ASCII s
// of up to maxFoldedLen bytes is lowered into one word (foldedWord), looked
// for among the set's words. Classifying a path asks it twice per target
// (the extension, the action), where a map cost a strings.ToLower and a
// string hash.
type foldedSet struct {
	// set is the set itself, lower case: what a string outside ASCII is
	// looked up in, lowered in full (strings.ToLower can change its length,
	// and the Kelvin sign lowers to an ASCII 'k').
	set   map[string]bool
	words []uint64
	// filter has bit wordBit(w) set for each of words: most strings
	// asked for are in no set (an extension of a path without one is
	// ""), and one bit tells most of them apart.
	filter uint64
}

// maxFoldedLen is the longest key of a foldedSet: the length and seven
// bytes fill a word.
const maxFoldedLen = 7

// newFoldedSet is the foldedSet of set's keys whose value is true, all
// ASCII, lower case and at most maxFoldedLen bytes.
func newFoldedSet(set map[string]bool) foldedSet {
	s := foldedSet{set: set}
	for k, in := range set {
		w, ascii := foldedWord(k)
		if !ascii || w == 0 || k != strings.ToLower(k) {
			panic("request: a folded set's key must be short lower-case ASCII: " + k)
		}
		if in {
			s.words = append(s.words, w)
			s.filter |= 1 << wordBit(w)
		}
	}
	slices.Sort(s.words) // the order of a map's keys is random; a set's need not be
	return s
}

// has reports set[strings.ToLower(x)].
func (s *foldedSet) has(x string) bool {
	w, ascii := foldedWord(x)
	if w != 0 {
		return s.filter&(1<<wordBit(w)) != 0 && slices.Contains(s.words, w)
	}
	if ascii {
		return false // longer than every key, and lowering ASCII keeps the length
	}
	return s.set[strings.ToLower(x)]
}

// wordBit is the bit of word w in a foldedSet's filter.
func wordBit(w uint64) uint64 { return w * 0x9e3779b97f4a7c15 >> 58 }

// foldedWord is x lowered (ASCII letters only) and packed into a word with
// its length, never 0, for an ASCII x of at most maxFoldedLen bytes; 0 for
// any other x, with ascii false if x holds a byte outside ASCII.
func foldedWord(x string) (w uint64, ascii bool) {
	for i := 0; i < len(x); i++ {
		c := x[i]
		if c >= utf8.RuneSelf {
			return 0, false
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		w = w<<8 | uint64(c)
	}
	if len(x) > maxFoldedLen {
		return 0, true
	}
	return w | uint64(len(x)+1)<<56, true
}
