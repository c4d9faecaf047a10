package mock

// outputWords are what the mock "generates": common words that are one o200k_base token each with
// their leading space, so a response of N chunks is N tokens when a client re-tokenizes the history.
var outputWords = []string{
	" the", " of", " and", " to", " in", " is", " that", " for", " it", " as", " was", " with", " be",
	" by", " on", " not", " he", " this", " are", " or", " his", " from", " at", " which", " but",
	" have", " an", " had", " they", " you", " were", " their", " one", " all", " we", " can", " her",
	" has", " there", " been", " if", " more", " when", " will", " would", " who", " so", " no",
	" time", " people", " way", " day", " world", " life", " work", " part", " place", " case",
	" point", " number", " group", " problem", " fact", " model",
}
