package workload

import (
	"fmt"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
)

// Editing a scenario document: a run from flags and each part of a matrix write keys into a
// scenario file's YAML, read as an ordered mapping so that the keys keep the order they were written
// in, and Parse then reads the result as it reads any file (docs/scenario.md). A path names a key by
// the keys from the top down, joined by dots: "load.mode", "session.think_time". No key of a
// scenario has a dot in it.

// DocGet returns the value at path in doc, and whether the key is there (a key under a value that
// is not a mapping is not; a key written with no value, or null, is, with the value nil).
func DocGet(doc yaml.MapSlice, path string) (any, bool) {
	var cur any = doc
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(yaml.MapSlice)
		if !ok {
			return nil, false
		}
		i := keyIndex(m, k)
		if i < 0 {
			return nil, false
		}
		cur = m[i].Value
	}
	return cur, true
}

// DocSet writes value at path in doc, creating the mappings on the way, and returns doc. A value on
// the way that is not a mapping is replaced by one. A key already there keeps its place; a new one
// goes last in its mapping.
func DocSet(doc yaml.MapSlice, path string, value any) yaml.MapSlice {
	return setKeys(doc, strings.Split(path, "."), value)
}

// DocDelete removes the key at path from doc and returns doc; a key that is not there is no error.
func DocDelete(doc yaml.MapSlice, path string) yaml.MapSlice {
	parentPath, key := "", path
	parent := doc
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		parentPath, key = path[:i], path[i+1:]
		p, _ := DocGet(doc, parentPath)
		var ok bool
		if parent, ok = p.(yaml.MapSlice); !ok {
			return doc
		}
	}
	i := keyIndex(parent, key)
	if i < 0 {
		return doc
	}
	rest := slices.Delete(parent, i, i+1)
	if parentPath == "" {
		return rest
	}
	return DocSet(doc, parentPath, rest)
}

func setKeys(m yaml.MapSlice, keys []string, value any) yaml.MapSlice {
	i := keyIndex(m, keys[0])
	if len(keys) > 1 {
		var child yaml.MapSlice
		if i >= 0 {
			child, _ = m[i].Value.(yaml.MapSlice) // a scalar there is replaced by the mapping
		}
		value = setKeys(child, keys[1:], value)
	}
	if i < 0 {
		return append(m, yaml.MapItem{Key: keys[0], Value: value})
	}
	m[i].Value = value
	return m
}

// keyIndex is the index of key in m, or -1. Keys are compared by their text (fmt.Sprint), so that a
// key YAML reads as a number or a bool, such as 1 or true, matches its path element too.
func keyIndex(m yaml.MapSlice, key string) int {
	return slices.IndexFunc(m, func(it yaml.MapItem) bool { return fmt.Sprint(it.Key) == key })
}
