package main

import "strings"

// splitStatements splits SQL text at the semicolons that end statements:
// not those inside a string literal ('it”s'), a quoted identifier
// ("a;b"), a line comment (-- ...) or a block comment (/* ... */).
// Statements are trimmed, without their semicolon; those holding nothing
// but blanks and comments are dropped. rest is what follows the last
// semicolon, trimmed: an unfinished statement, or "" when there is none.
func splitStatements(text string) (statements []string, rest string) {
	start := 0
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '\'' || c == '"':
			// A doubled quote stands for one and does not end the literal.
			for i++; i < len(text); i++ {
				if text[i] == c {
					if i+1 < len(text) && text[i+1] == c {
						i++
						continue
					}
					break
				}
			}
		case c == '-' && strings.HasPrefix(text[i:], "--"):
			if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
				i += j
			} else {
				i = len(text)
			}
		case c == '/' && strings.HasPrefix(text[i:], "/*"):
			if j := strings.Index(text[i+2:], "*/"); j >= 0 {
				i += 2 + j + 1
			} else {
				i = len(text)
			}
		case c == ';':
			if s := strings.TrimSpace(text[start:i]); !onlyComments(s) {
				statements = append(statements, s)
			}
			start = i + 1
		}
	}
	rest = strings.TrimSpace(text[min(start, len(text)):])
	if onlyComments(rest) {
		rest = ""
	}
	return statements, rest
}

// onlyComments reports whether s holds nothing but blanks and complete or
// unfinished comments.
func onlyComments(s string) bool {
	for {
		s = strings.TrimSpace(s)
		switch {
		case s == "":
			return true
		case strings.HasPrefix(s, "--"):
			j := strings.IndexByte(s, '\n')
			if j < 0 {
				return true
			}
			s = s[j+1:]
		case strings.HasPrefix(s, "/*"):
			j := strings.Index(s[2:], "*/")
			if j < 0 {
				return true
			}
			s = s[2+j+2:]
		default:
			return false
		}
	}
}
