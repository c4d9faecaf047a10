package workload

// Word lists for synthetic prose. Each sentence is built from a template over these lists, so the
// text reads like plain writing, and every word is a whole tokenizer piece, so its token count is
// the sum of its words' counts (see text.go).

var enWords = map[string][]string{
	"adj": {"quiet", "bright", "careful", "early", "simple", "useful", "warm", "small", "large", "patient",
		"honest", "clear", "gentle", "steady", "curious", "modern", "ancient", "friendly", "narrow", "open",
		"local", "public", "private", "sudden", "final", "quick", "slow", "busy", "calm", "rough"},
	"noun": {"garden", "river", "teacher", "report", "window", "market", "letter", "village", "engine", "story",
		"student", "kitchen", "library", "question", "answer", "journey", "doctor", "machine", "station", "island",
		"customer", "budget", "meeting", "harbor", "forest", "painter", "bridge", "recipe", "schedule", "traveler",
		"manager", "lesson", "service", "picture", "morning", "evening", "company", "problem", "window", "message"},
	"verb": {"opened", "found", "built", "carried", "described", "checked", "followed", "changed", "explained", "visited",
		"watched", "answered", "prepared", "shared", "reviewed", "moved", "noticed", "cleaned", "planned", "finished",
		"measured", "improved", "repaired", "collected", "welcomed", "remembered", "questioned", "studied", "painted", "sent"},
	"adv": {"slowly", "quickly", "carefully", "again", "together", "early", "later", "quietly", "gladly", "firmly",
		"often", "rarely", "finally", "clearly", "gently"},
	"prep": {"near", "behind", "across", "beside", "under", "over", "after", "before", "around", "through", "with", "without"},
	"det":  {"the", "a", "every", "one", "that", "this", "another", "each"},
	"pron": {"she", "he", "they", "we", "you", "someone", "nobody", "everyone"},
	"conj": {"and", "but", "so", "while", "because"},
	"role": {"librarian", "chef", "travel guide", "tutor", "detective", "gardener", "astronomer", "nurse",
		"historian", "mechanic", "poet", "coach", "pharmacist", "sailor", "architect", "barista"},
	"name": {"Mira", "Jonas", "Ada", "Theo", "Lena", "Omar", "Iris", "Felix", "Nora", "Hugo", "Clara", "Ravi",
		"Sofia", "Elias", "Maya", "Leo", "Anya", "Victor", "June", "Oscar"},
}

// enTemplates are sentence shapes; each slot names a word list, "," is a comma.
var enTemplates = [][]string{
	{"det", "adj", "noun", "verb", "det", "noun", "prep", "det", "adj", "noun"},
	{"pron", "verb", "det", "noun", "adv"},
	{"det", "noun", "verb", "det", "adj", "noun", ",", "conj", "pron", "verb", "det", "noun", "adv"},
	{"prep", "det", "noun", ",", "det", "adj", "noun", "verb", "det", "noun"},
	{"pron", "adv", "verb", "det", "noun", "prep", "det", "noun"},
	{"det", "noun", "prep", "det", "noun", "verb", "det", "adj", "noun", "adv"},
}

// enFillers are one-token words used to land exactly on a token target.
var enFillers = []string{"the", "and", "of", "to", "in", "it", "is", "was", "for", "on", "as", "at", "by", "all"}

var koWords = map[string][]string{
	"noun": {"고객", "문서", "정원", "도서관", "학생", "회의", "시장", "편지", "여행", "질문", "대답", "기록", "계획",
		"선생님", "주방", "역", "다리", "숲", "아침", "저녁", "회사", "문제", "메시지", "일정", "사진", "이야기", "마을",
		"기계", "의사", "예산"},
	"adv": {"빠르게", "천천히", "조심스럽게", "다시", "함께", "일찍", "나중에", "조용히", "분명하게", "자주", "마침내", "기꺼이"},
	"adj": {"조용한", "밝은", "작은", "큰", "친절한", "새로운", "오래된", "따뜻한", "간단한", "중요한", "바쁜", "차분한"},
	"verb": {"확인했습니다", "설명했습니다", "준비했습니다", "살펴보았습니다", "정리했습니다", "보냈습니다", "바꾸었습니다",
		"기억했습니다", "찾았습니다", "열었습니다", "고쳤습니다", "나누었습니다", "공부했습니다", "기다렸습니다"},
	"conj": {"그리고", "하지만", "그래서", "그런데", "또한"},
	"role": {"사서", "요리사", "여행 안내자", "선생님", "탐정", "정원사", "천문학자", "간호사", "역사학자", "시인",
		"코치", "약사", "건축가", "바리스타"},
	"name": {"민지", "서준", "하은", "도윤", "지아", "예준", "수아", "시우", "하린", "주원", "유나", "지호"},
}

// koTemplates use the suffix slots "subj" and "obj", which attach the right particle to the noun before.
var koTemplates = [][]string{
	{"adj", "noun", "subj", "noun", "obj", "adv", "verb"},
	{"conj", "noun", "subj", "adj", "noun", "obj", "verb"},
	{"noun", "subj", "adv", "noun", "obj", "verb"},
	{"adj", "noun", "obj", "adv", "verb"},
}

var koFillers = []string{"그", "이", "더", "또", "잘", "늘", "꼭", "곧"}
