#!/usr/bin/env python3
"""Writes the tokenizer parity corpus (tests/tok/corpus/*.txt, about 1.2 MB)
deterministically from a fixed seed: English prose with mixed-case
contractions, Chinese/Japanese/Korean, code, emoji and ZWJ sequences,
whitespace runs (tabs, CRLF, odd Unicode spaces), long numbers, special
tokens of the tested families inside text, decomposed accents (NFC), and
random assigned code points.  usage: gen_corpus.py [OUTDIR]"""
import os, random, sys, unicodedata

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
R = random.Random(20240531)

WORDS = ("the of and to in is was for that with as on by at from his her this which or an be are it were had not "
         "but have they one you all their has been would there she what when we can more who about will if out "
         "so up said into them some could time these two may then first any my now such like other how over new "
         "tokenizer merge vocabulary quantization fidelity hidden states divergence reference candidate model "
         "über naïve café résumé façade jalapeño coöperate Zürich São Paulo Ελληνικά русский язык العربية עברית "
         "हिन्दी ไทย Tiếng Việt").split()
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'M", "'LL", "'D", "’s", "'x"]
HAN = "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持取设始版双历越史商千片容研像找友孩站广改议形委早房音火际则首单据导影失拿网香似斯专石若兵弟谁校读志飞观争究包组造落视济喜离虽坏兴县须"
KANA = "あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをんアイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモヤユヨラリルレロワヲンー"
HANGUL = "한국어 문장 토크나이저 시험 데이터 입니다 그리고 숫자"
PUNCT_ZH = "，。！？；：「」『』（）、《》…—"
EMOJI = ["😀", "😂", "🥲", "👍", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇯🇵", "🇺🇸", "❤️", "🧑🏿‍💻", "👩‍❤️‍💋‍👨", "🤷‍♀️", "🫠", "🐍", "🚀", "✨", "🔥", "1️⃣", "#️⃣", "©", "™", "☃", "♥"]
SPACES = [" ", "  ", "\t", "\t\t", "\n", "\r\n", "\n\n", " \n", "\u00a0", "\u3000", "\u2028", "\u0085", "\u2003", "\u200b", "\u202f", "\r", "\f", "\v"]
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_pad|>", "<|begin_of_text|>", "<|eot_id|>",
            "<|start_header_id|>", "<|reserved_special_token_5|>", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>",
            "<think>", "</think>", "<|im_start", "im_end|>", "<|", "|>", "<<|im_end|>>", "<|fim_prefix|>", "<tool_call>"]


def sentence():
    n = R.randint(4, 18)
    ws = []
    for i in range(n):
        w = R.choice(WORDS)
        r = R.random()
        if r < 0.1: w = w.upper()
        elif r < 0.25: w = w.capitalize()
        if R.random() < 0.08: w += R.choice(CONTRACTIONS)
        ws.append(w)
    return " ".join(ws) + R.choice([".", ".", "!", "?", ",", ";", ":", "...", " -", "\""])


def english(size):
    out, n = [], 0
    while n < size:
        p = " ".join(sentence() for _ in range(R.randint(2, 7))) + R.choice(["\n", "\n\n", " "])
        out.append(p); n += len(p.encode())
    return "".join(out)


def cjk(size):
    out, n = [], 0
    while n < size:
        r = R.random()
        if r < 0.7: s = "".join(R.choice(HAN) for _ in range(R.randint(3, 30))) + R.choice(PUNCT_ZH)
        elif r < 0.85: s = "".join(R.choice(KANA) for _ in range(R.randint(3, 20))) + "。"
        elif r < 0.93: s = HANGUL[R.randint(0, 5):]
        else: s = " " + R.choice(WORDS) + " " + str(R.randint(0, 10**R.randint(1, 8)))
        if R.random() < 0.1: s += "\n"
        out.append(s); n += len(s.encode())
    return "".join(out)


def code(size):
    names = ["x", "y", "buf", "n_tokens", "fd_tok_encode", "self", "ctx", "i", "j", "kMaxLen", "__init__", "HTTPServer", "parseJSON"]
    ops = [" = ", " += ", " == ", " != ", " -> ", "::", ".", " && ", " || ", " << ", " >>= ", "**", " // "]
    out, n, depth = [], 0, 0
    while n < size:
        ind = R.choice(["    " * depth, "\t" * depth, "  " * depth])
        r = R.random()
        if r < 0.2:
            line = "%sfor (size_t %s = 0; %s < %d; %s++) {" % (ind, "i", "i", R.randint(0, 99999), "i"); depth = min(depth + 1, 6)
        elif r < 0.35:
            line = ind + "}"; depth = max(depth - 1, 0)
        elif r < 0.5:
            line = '%sprintf("%%s: %%d\\n", %s, %d);' % (ind, R.choice(names), R.randint(-999, 99999))
        elif r < 0.6:
            line = "%s# %s" % (ind, sentence())
        elif r < 0.7:
            line = "%sdef %s(%s, *args, **kwargs):" % (ind, R.choice(names), R.choice(names))
        elif r < 0.8:
            line = '%s"""%s"""' % (ind, sentence())
        else:
            line = ind + R.choice(names) + R.choice(ops) + R.choice(names) + "[" + str(R.randint(0, 4096)) + "]" + R.choice([";", "", " # done", "  ", "\t"])
        line += R.choice(["\n", "\n", "\n", "\r\n", "\n\n"])
        out.append(line); n += len(line.encode())
    return "".join(out)


def emoji(size):
    out, n = [], 0
    while n < size:
        r = R.random()
        if r < 0.5: s = "".join(R.choice(EMOJI) for _ in range(R.randint(1, 6)))
        elif r < 0.7: s = R.choice(WORDS) + R.choice(EMOJI)
        elif r < 0.85:  # decomposed accents: NFC changes these
            s = unicodedata.normalize("NFD", R.choice(["café", "naïve", "Ångström", "résumé", "한국어", "Ǆ", "ḗ", "ệ"]))
        else: s = R.choice(["e\u0301", "a\u0308\u0301", "\u0301x", "o\u0323\u0302", "\u1100\u1161\u11a8", "ﬁ", "Ⅻ", "①", "ｶﾀｶﾅ", "ǅ"])
        s += R.choice(SPACES)
        out.append(s); n += len(s.encode())
    return "".join(out)


def ws_numbers(size):
    out, n = [], 0
    while n < size:
        r = R.random()
        if r < 0.35: s = "".join(R.choice(SPACES) for _ in range(R.randint(1, 12)))
        elif r < 0.45: s = " " * R.randint(1, 300) + R.choice(["x", "\n", "", "\t"])
        elif r < 0.75: s = str(R.randint(0, 10 ** R.randint(1, 60)))
        elif r < 0.85: s = "%d.%0*d" % (R.randint(0, 10**6), R.randint(1, 9), R.randint(0, 10**8))
        elif r < 0.9: s = "".join(R.choice("٠١٢٣٤٥٦٧٨٩०१२३४५६७८९１２３") for _ in range(R.randint(1, 9)))
        else: s = R.choice(WORDS) + str(R.randint(0, 999)) + R.choice(WORDS)
        out.append(s + R.choice(["", " ", "\n", ",", "\r\n"])); n += len(out[-1].encode())
    return "".join(out)


def specials(size):
    out, n = [], 0
    while n < size:
        s = sentence() if R.random() < 0.5 else ""
        s += R.choice(SPACES[:6]) if R.random() < 0.5 else ""
        s += R.choice(SPECIALS)
        s += R.choice(["", " ", "\n", "x", "user\n", "  "])
        out.append(s); n += len(s.encode())
    return "".join(out)


ASSIGNED = [cp for cp in range(0x20, 0x30000) if unicodedata.category(chr(cp)) not in ("Cn", "Cs", "Co")]


def random_unicode(size):
    out, n = [], 0
    while n < size:
        r = R.random()
        if r < 0.6: s = "".join(chr(R.choice(ASSIGNED)) for _ in range(R.randint(1, 8)))
        elif r < 0.8: s = "".join(chr(R.randint(0x20, 0x7e)) for _ in range(R.randint(1, 12)))
        else: s = R.choice(SPACES)
        out.append(s); n += len(s.encode())
    return "".join(out)


FILES = [("english.txt", english, 330000), ("cjk.txt", cjk, 260000), ("code.txt", code, 200000),
         ("emoji.txt", emoji, 110000), ("whitespace_numbers.txt", ws_numbers, 160000),
         ("specials.txt", specials, 60000), ("random_unicode.txt", random_unicode, 120000)]

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for name, fn, size in FILES:
        with open(os.path.join(OUT, name), "w", encoding="utf-8", newline="") as f:
            f.write(fn(size))
