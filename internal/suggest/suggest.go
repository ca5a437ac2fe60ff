// Package suggest finds the known name a mistyped one was meant to be, for
// errors that say "did you mean ...".
package suggest

// maxFast is the longest pair Distance compares without allocating.
const maxFast = 64

// Distance is the Levenshtein distance between a and b, in bytes.
func Distance(a, b string) int {
	var rows [2][maxFast + 1]int
	prev, cur := rows[0][:], rows[1][:]
	if len(b) > maxFast {
		prev, cur = make([]int, len(b)+1), make([]int, len(b)+1)
	}
	for j := 0; j <= len(b); j++ {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Nearest returns the name of known closest to word (the first of equals),
// and its distance; "" and -1 when known is empty.
func Nearest(word string, known []string) (string, int) {
	best, bestDistance := "", -1
	for _, k := range known {
		if d := Distance(word, k); bestDistance < 0 || d < bestDistance {
			best, bestDistance = k, d
		}
	}
	return best, bestDistance
}
