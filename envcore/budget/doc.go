// Package budget cuts a page's text view to a token budget: at most so many
// tokens as the trainer's own tokenizer counts them, keeping what an agent
// can act on (docs/envcore.md, "Token budget").
//
// # The budget
//
// A budget is a number of tokens (at least MinTokens) and a Counter, the
// tokenizer that counts them (tokenizer.Tokenizer, read from a Hugging Face
// tokenizer.json). A text within its budget is returned as it is. The
// count of the result is exact: the lines' own counts guide the pruning,
// and the whole text is counted again before it is returned.
//
// # The text
//
// The text is one of the page's text views, one element a line, indented
// by depth with tabs: the accessibility tree (AXTree) or the HTML outline
// (HTML), as the injected parser writes them. Beside it, places holds one
// byte a line saying where the line's element is against the viewport:
// '0' on the screen, 'a' above it, 'b' below or beside it.
//
// # How it is cut
//
// A text over its budget is pruned line by line:
//
//  1. long texts (over 120 characters) keep their first 100, with a
//     marker saying how much was cut;
//  2. runs of four or more like siblings (the same role and the same roles
//     under them: table rows, list items) are collapsed where they are off
//     the screen: the first two stay, and each stretch of the others
//     becomes one line, a fold, "… 37 more items like this (below the
//     screen: scroll down, or expand("fold-3935a2be-2"), to see them)";
//  3. while still over, whole lines are dropped class by class, each from
//     the bottom of the page up: off-screen text, elements with ids,
//     headings and landmarks, then the same on the screen, then the items
//     of an expanded fold. A line goes only once no line under it is left,
//     so every kept line keeps its ancestors and every kept element its id.
//
// A fold's id names the element whose children it collapsed (its path of
// roles, hashed) and the first child it stands for, so it is the same in
// every text of an unchanged page; IsFoldID checks one. Passing a fold id
// as expand shows that fold's items first and keeps them before anything
// else; those the budget still cannot hold are folded again under the id
// of the first of them.
//
// # The closing line
//
// A pruned text ends with a line saying what was left out and how to see
// it again, a comment in the HTML view:
//
//	[observation cut to its token budget: 1 long texts cut; 2340 like items collapsed (scroll, or expand a fold, to see them); 415 lines below the screen left out (scroll down)]
//
// If even the title and the closing line do not fit, the text is cut at
// the budget.
//
// # Calling it
//
//	r := budget.Fit(text, places, 1024, tok, "", budget.AXTree)
//	// r.Text: at most 1024 tokens; r.Tokens: its count;
//	// r.Truncated: whether it was pruned; r.Folds: the fold ids it shows.
//
// The result depends only on the text, its places, the budget and expand:
// no times, counters or random ids, so a trainer that re-tokenizes earlier
// turns gets the same ids for an unchanged page. The package imports
// nothing of WebServ's.
package budget
