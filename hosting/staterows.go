package hosting

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// StateRows names rows of a site's state (its state_db's tables, or the
// tables its declared state is read into: "files" for its files): the
// rows of Table whose columns hold the values in Where (every row of it
// without Where), and of those only the columns in Columns (all without
// it). A site definition's bookkeeping and a task's may_change are lists
// of them: what an episode may change without it being a side effect
// (docs/tasks.md "Side effects").
//
//	{table: sessions}                                     every session row
//	{table: products, where: {sku: TSH-1028}, columns: [stock]}
type StateRows struct {
	Table string `json:"table"`
	// Where's values are compared as text with the row's (a row changed
	// by an update matches with its values before or after it).
	Where map[string]any `json:"where,omitempty"`
	// Columns narrow an update: one that changes any other column is not
	// covered. An insert or delete is covered whatever Columns says.
	Columns []string `json:"columns,omitempty"`
}

// Validate says what is wrong with r, if anything.
func (r StateRows) Validate() error {
	if strings.TrimSpace(r.Table) == "" {
		return errors.New("table: empty (name a table of the site's state, like sessions)")
	}
	for k, v := range r.Where {
		switch v.(type) {
		case string, float64, int, int64, bool, nil:
		default:
			return fmt.Errorf("where.%s: %v is not a plain value (text, number, true/false or null)", k, v)
		}
	}
	return nil
}

// Covers says whether r names a change of a row of table: row is the row
// now (an insert's or update's) or as it was (a delete's), old an
// update's changed columns as they were.
func (r StateRows) Covers(table, op string, row, old map[string]any) bool {
	if r.Table != table {
		return false
	}
	match := func(get func(string) (any, bool)) bool {
		for k, want := range r.Where {
			got, ok := get(k)
			if !ok || ValueText(got) != ValueText(want) {
				return false
			}
		}
		return true
	}
	now := func(k string) (any, bool) { v, ok := row[k]; return v, ok }
	was := func(k string) (any, bool) {
		if v, ok := old[k]; ok {
			return v, true
		}
		return now(k)
	}
	if !match(now) && !(op == "update" && match(was)) {
		return false
	}
	if op != "update" || len(r.Columns) == 0 {
		return true
	}
	for k := range old {
		found := false
		for _, c := range r.Columns {
			found = found || c == k
		}
		if !found {
			return false
		}
	}
	return true
}

// ValueText is a state value as text, as a state check compares it: ""
// for NULL, a whole number without a decimal point.
func ValueText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case []byte:
		return string(x)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e18 {
			return fmt.Sprint(int64(x))
		}
		return fmt.Sprint(x)
	case float32:
		return ValueText(float64(x))
	}
	return fmt.Sprint(v)
}

// validateRows checks a list of StateRows, naming the list and entry.
func validateRows(name string, rows []StateRows) error {
	for i, r := range rows {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("%s[%d].%w", name, i, err)
		}
	}
	return nil
}
