package envcore

// CallFormNames are every call form's names, aliases left out, one list a
// form, for the test that Actions describes each of them.
func CallFormNames() [][]string {
	var out [][]string
	for _, f := range callForms {
		out = append(out, f.names)
	}
	return out
}

// CoordActionTypes are the coordinate actions' types.
func CoordActionTypes() []ActionType {
	var out []ActionType
	for _, c := range coordActions {
		out = append(out, c.typ)
	}
	return out
}
