"""Chinese text for the rewards: the last answer a Chinese completion states, and its numbers, before math-verify.

math-verify reads numbers between Chinese characters badly ("答案：20" and "有20张" read as nothing) and takes a
number anywhere in the text ("=20，答案：22" passes for a gold of 20). For a text with Chinese characters the answer
is found first, in this order, the last of its kind winning:

1. an anchor: 最终答案 / 正确答案 / 答案 / 最终结果 / 得数, then 是 / 为 / 应为 / 约为 / 大约是 / 等于 / ：/ : / =
   (not 是否: "答案是否正确" asks), or 答： / 答: (the answer line of a school solution; not 回答 / 解答), and the answer
   up to the end of its clause (。！？；，、, a line end or an ellipsis before Chinese text); a list on the lines after
   it is its answer, read as a text of its own ("最终答案：\\n- 第一天：12个\\n- 总共：20个" -> "20": its total, else
   its last number);
2. a total: 一共 / 总共 / 共计 / 合计 / 总计 / 总数是 / 总数为 / 共 followed by a number ("一共有8个"; 共 in a word is
   none: 公共, 共享, 共同), a part or a multiple of the total (总数的一半是 / 总数的三分之一为 / 总数的2倍是 ...:
   "一共有3箱，总数的一半是12" -> "12"), a bare 结果, which may be a step's ("3×4的结果是12"), or, after the last
   of these, a clause that concludes, perhaps after a short subject but never a rate (每天需要读30页): 所以 / 因此 /
   那么 / 可以 / 能 / 最后 / 平均 / 需要 / 就是 / 得到 ... ("一共有24个学生，每组4人，可以分6组" -> "6", "共有240页，
   他需要8天读完" -> "8", "三个班一共有120人，平均每班有40人" -> "40"), what is left or there now (还剩 / 剩下 / 剩余 /
   还有 / 现在有: "共有12个苹果，吃了5个，还有7个" -> "7"; not after a total of what there was at first, 原来一共有12个)
   or a calculation's = result ("一共有3箱，每箱8个，3×8=24（个）" -> "24"); a total that restates a given thus gives
   way to the answer stated after it, while "一共有8个，其中3个是红的" -> "8" and "一共需要24元，每人8元" -> "24"; no
   clause concludes where it describes a number with words ("剩下的3个是红的", "还有3个是红的"), and none of these
   counts in an aside in brackets ("（3箱共12个）") or in a check (验证：...);
3. else Chinese numerals in a clause that concludes after the last number ("每天读60页，所以需要三天读完" -> "3"), else
   the last run of text without Chinese characters that holds a number or LaTeX ("有20张" -> "20"), none in an aside in
   brackets where one outside states a number ("有17个。（3箱共12个，加上5个）" -> "17").

A check or an explanation after a stated answer states no new answer: from its heading (验证 / 检验 / 验算 / 检查 /
核对, perhaps after 我们来 / 再 ..., or 解析： / 解释： / 说明：) to a sentence that concludes again (所以 / 答案 / 答：),
its numbers are not read ("所以有17个。验证：17-12=5，正确。" -> "17"); before any answer it is working like any other.
A number after 不是 / 而不是 / 并非 / 而非 in its clause is no answer ("有17个，不是12个" -> "17"; "不是12个" -> "").
A \\boxed{} that holds Chinese, which math-verify cannot read, is read as an anchor's answer (the last box, its
\\text{} unwrapped: \\boxed{36元} -> "36", \\boxed{十七} -> "17", \\boxed{负3} -> "-3"); one without Chinese is left to
math-verify (\\boxed{17}, \\boxed{\\frac{1}{2}}: stated_answer is None), as in English.

A self-correction replaces the last anchor or total before it (working in between does not count), else the last number,
and takes its kind in this order: 应为 / 应是 / 应该是, or a bare 是 before a number ("不对，是41"; not "不，是因为"), opening a clause
(perhaps after the quantity or the variable it names: 总数应为, x应为, x的值应为), after a no, a wait, an error owned or an
apology (不，/ 不对不对，/ 哦不，/ 啊不对，/ 嗯不对，/ 错了，/ 刚才说的不对，/ 等等，/ 更正：/ 纠正一下，/ 我算错了，/ 不好意思，/ 抱歉，/ 对不起，), after a question that held
a number or an anchor and asks for none ("答案是42吗？是41"; not "12除以3是多少？是4"), or right after an ellipsis ("42……应该是41"). An
ellipsis (……, …, ⋯, ...) before Chinese text ends a clause; one in maths does not (1+2+…+100), and one before a number
is a pause, no part of it ("答案是……42" -> 42). An apology takes an answer back only as the whole clause before a
correction ("抱歉，应为41"), never by itself ("抱歉让你久等了，答案是42" -> 42). "结果是42吗？不，应为41" -> 41; "有5个吗？不，应为6个。又买了3个，现在有9个" -> 9:
a corrected number is outranked by a number in a later sentence, as any number is, but not by one in a clause that
explains or checks it ("应为41个，因为要减去1个" -> 41); in its own sentence, a clause that only describes it does not outrank it
("应为15平方米，长5米宽3米" -> 15), one that concludes does (所以 / 现在 / 需 / 共 / 剩 / = / 等于 / 就是, or 是 / 为 between
numbers, 为 not in 因为 / 作为 / 认为 ...: "应该是4元，买5个需要20元" -> 20, "应为6个，加上3个为9个" -> 9); in no sentence does a
clause where 是 or 为 describes a number with words ("应为6个，其中2个是红色的" -> 6, "应该是6个。剩下的2个为红的" -> 6).
Asked ("应为41吗？"), inside a sentence ("为什么应为正数", "因为x应为3"), stating a property where a number is read
("应为3的倍数", "应该是一个偶数") or with no answer stated before it, it states nothing.

Within the answer, what follows its last = (or 是 / 为 between numbers) is kept where a number follows it
("1.2公顷=12000平方米" -> "12000平方米", "3箱为24个" -> "24个", "三箱为二十四个" -> "二十四个": a calculation ends in its
result; an answer through an operand or a sum not worked out gives way to the clause that restates it, whatever
stated it (an anchor, a total, a conclusion, a correction): "答案是5的2倍，即10" -> "10", "结果是3+4，也就是7" -> "7";
with no restatement it states no single number, neither its first operand nor its value ("答案是2乘5" -> "", 2×5, 2*5
and 5的2倍 likewise; 3+4 is left to math-verify, which reads it whole, and answers.py, which scores it nothing);
即使 and 立即 restate nothing; a restatement that is itself an expression says how the number before it came about,
and states no later one: "所以是10，即5的2倍" -> "10", 即2乘5 and 即3+7 likewise), and of that the first run holding a
number ("约20个苹果" -> "20"); a number with 万 or 亿 right after it is multiplied (3万 -> 30000, 1.5亿 -> 150000000), one
with 千 or 百 too unless a unit starts there (千米, 千克, 千瓦, 百分之 are no multipliers); an answer written in Chinese numerals
(二十, 两万三千) is read by cn2an; fractions and percentages in words become digits (四分之三 -> 3/4, 百分之二十五 -> 25%, 1又1/2 ->
3/2), and 负 before a number its minus (负3 -> -3, 负二分之一 -> -1/2; not in a score of games: 胜7场负3场), 正负 or ± its \\pm (正负3
-> \\pm 3, which math-verify reads as {-3, 3}, as it does a gold of ±3), in a gold too. Numerals outside an
anchor, a total or a conclusion are not read: 一 is also a word (一下, 一起); within one they are read at its end or
before a measure word (三箱, 两盒, 三小时, 十五题, 三十厘米), after a short verb too (一共要付两千五百元; not an ordinal:
第一名), not in a word that 一 and a measure word make (一本正经, 一块儿). The anchor's connector may be doubled
(答案是：42) and Markdown emphasis may wrap it (**答案**：42). An answer in LaTeX delimiters ($...$, \\(...\\),
\\[...\\]) is read whole, by math-verify.

A number that a property names is no answer, after an anchor as anywhere else (3的倍数, 12的因数, 大于5, 60分以上,
100以内, the 一 of 一个偶数, a strict bound: 少于5, 不足5; a bound that may be met does state one: 至少 / 最多 / 不少于 /
不多于 / 不超过 / 不低于, "至少需要5辆" -> 5, "应为不少于5辆" -> 5): "答案是3的倍数" states nothing, as "应为3的倍数"
does, and a text whose only numbers are such states no number at all ("答案是3的倍数" -> ""). Nor does a range
(1-2个, 3~5天, 3至5天; rising, and a - only before a unit): "答案是1-2个" -> "", no sum (1-2 is no -1), nor its first
number; 5-3个 and 12-5=7 are sums, as before.
"""

from __future__ import annotations

import re

# CJK ideographs and the full-width punctuation that ends a clause
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# an ellipsis before Chinese text ends a clause too ("答案是42……不对，是41"); one in maths does not (1+2+…+100): those
# that end one are marked with _ELLIPSIS first (_ellipses)
_ELLIPSIS = "\ufe19"
_CLAUSE_END = "。！？；，、\n!?;" + _ELLIPSIS
# the connector may be doubled ("答案是：42", "答案为:42"), and Markdown emphasis may wrap the anchor ("**答案**：42")
# 答： opens the answer line of a school solution (not 回答 / 解答: no Chinese character before it); a bare 结果 may
# name a step's result ("3×4的结果是12"): group "step", ranked as a total, which a later conclusion outranks;
# 是否 asks ("答案是否正确"), it states nothing
_ANCHOR = re.compile(r"(?:最终答案|正确答案|最后答案|答案|(?:最终|最后|正确)的?结果|(?P<step>结果)|得数"
                     r"|(?<![\u3400-\u4dbf\u4e00-\u9fff])答(?=[\s*_]*[:：]))[\s*_]*"
                     r"(?:(?:应该是|应为|应是|就是|约为|约是|大约是|大约为|约等于|是(?!否)|为|等于|[:：=])[\s*_]*)+"
                     rf"(?P<answer>[^{_CLAUSE_END}]*)")
# a self-correction: 应为 / 应该是 at the start of a clause (an ASCII comma ends one here: "不,应为41"), or a bare 是
# before a number ("不对，是41"; group "bare"), perhaps after the quantity it names ("总数应为41") or a variable
# ("x应为3", "$x_1$的值应为3"; not 它/这, which name anything: "这应为一道减法题"), then the answer and the mark that ends it
_SUBJECT = r"(?:总数|总和|总量|总价|个数|数量|数目|(?:\$|\\\()?[A-Za-z]{1,2}(?:_\{?\w+\}?|\d)?(?:\$|\\\))?\s*(?:的值)?)"
_CORRECTION = re.compile(rf"(?<=[{_CLAUSE_END}：:,])[\s*_]*{_SUBJECT}?"
                         r"(?:应该是|应该为|应当是|应当为|应为|应是"
                         r"|(?P<bare>是)(?=[\s*_]*(?:[-+$\\\d]|负|约|大约|[零〇一二两三四五六七八九十]|百分之)))"
                         rf"[\s*_]*(?:[:：=][\s*_]*)?(?P<answer>[^{_CLAUSE_END}]*)(?P<mark>[{_CLAUSE_END}]?)")
# the clause before it that makes it one: a no, a wait, an error owned, an apology ("不对不对", "哦不", "嗯不对", "等等",
# "更正", "纠正一下", "我算错了", "刚才说的不对", "不好意思", "抱歉") ... but not 不错 ("right") or 错不了 ("can't be wrong")
_BARE_NO = re.compile(r"(?!.*(?:不错|错不))(?:[\s*_]*[哦噢喔啊呃哎唉嗯诶欸]*"
                      r"(?:不对|不是的?|不正确|不|(?:我|刚才|之前|前面|上面)?(?:[算写看弄搞说]的?)?(?:错了?|不对|有误)|等等|等一下"
                      r"|(?:我|让我|我来)?(?:更正|纠正)(?:一下)?|不好意思|抱歉|对不起)"
                      r"[了啊呀哦]?[\s*_]*)+")
# ... or a question that proposed an answer; one that asks for a number ("12除以3是多少？是4") proposes none
_PROPOSED = re.compile(r"[\d０-９零〇一二两三四五六七八九十百千万亿]")
_ASKS_FOR = re.compile(r"多少|几|什么|哪|怎么|如何|为什么|为何")
# a correction that states a property, not a value, states nothing: 应为3的倍数, 应该是一个偶数, 应为大于5的数; a bound
# states one, as after an anchor (应为至少5辆, 不少于5辆, 不超过5辆)
_PROPERTY = re.compile(r"的|倍数|[偶奇正负整质素合实虚分小因约]数|[大小]于|(?<!不)[多少]于|不足|以上|以下|之间")
# a clause that explains or checks a corrected number, whose numbers state no new answer: "应为41个，因为要减去1个",
# "应为41个。验证：41+1=42"
# a restatement (即10, 也就是10, 也就是说10); 即 in a word restates nothing (即使, 即便, 即刻, 即将 ...)
_RESTATES = r"(?:即(?![使便刻时将日])|也就是|也即|亦即)"
_EXPLAINED = re.compile(rf"^[{_CLAUSE_END}\s*_]*(?:因为|由于|理由是|验证|验算|检验|检查|核对|{_RESTATES})")
# in the rest of a corrected number's own sentence, only a clause that concludes states a new answer ("应为3，所以y=7",
# "应该是4元，买5个需要20元", "应为12页，12×5=60", "加上3个是9个", "3箱为24个": 是 or 为 between two numbers); one
# that describes it does not ("应为15平方米，长5米宽3米", "长是5米", "长为5米"), nor, in any sentence, one where 是 or
# 为 describes a number with words ("其中2个是红色的", "剩下的2个为红的": after a number they conclude only with a
# number after them); 为 inside a word concludes nothing (因为, 作为, 认为, 以为, 称为, 视为, 为了, 为止)
_SENTENCE_END = re.compile(r"[。！？!?\n]")
_NUMBER_AFTER = r"(?=[\s*_]*(?:[-+\d]|负))"
_IS = r"(?:是|(?<![因作认以称视])为(?![了止何什]))"
_IS_BETWEEN_NUMBERS = rf"(?<=\d)[\u4e00-\u9fff]?{_IS}{_NUMBER_AFTER}"
_CONCLUDES = re.compile(rf"所以|因此|因而|于是|那么|则|故|从而|现在|最后|最终|就是|等于|需|共|剩|[=＝]|{_IS_BETWEEN_NUMBERS}")
_DESCRIBES = re.compile(rf"\d[\u4e00-\u9fff]?[是为](?!{_NUMBER_AFTER})")
# where an answer was stated, the rank of its kind: the last anchor, else the last total, else the last number
# a clause that opens with a conclusion or with what is left: after a total, it states the answer, the total a given
# ("一共有24个学生，每组4人，可以分6组" -> 6; "共有12个，吃了5个，还剩7个" -> 7; "共有8个苹果，每个3元" -> 8); the
# remaining ones described are no conclusion ("剩下的3个是红的")
_ANCHOR_RANK, _TOTAL_RANK, _NUMBER_RANK = 0, 1, 2
# a part or a multiple of the total stated later is a later total (a given 一共有3箱 before it: "一共有3箱，总数的一半是12"
# -> 12, "一共有3箱，总数的2倍是48" -> 48)
_PART = (r"(?:的(?:一半|[\d零〇一二两三四五六七八九十百]+分之[\d零〇一二两三四五六七八九十百]+|\d+(?:\.\d+)?[%％]"
         r"|(?:\d+(?:\.\d+)?|[一二两三四五六七八九十百]+)倍))")
# 共 in a word is no total: 公共汽车, 共享, 共同 (一共同时 too), 共和国 ...
_TOTAL = re.compile(rf"(?:(?:一共|总共|(?<!公)共)(?!同|享|和|识|鸣|处|产|性|振|存|事|赢|勉)|共计|合计|总计|总数{_PART}?[是为])"
                    rf"(?:有|是|为|需要?|用了?|花了?)?\s*([^{_CLAUSE_END}]*)")
_LEFT = r"(?:还|只)?剩(?:下|余)?(?![下余]?的\s*\d)"
# a clause that concludes, perhaps after a short subject ("他需要8天", "3箱就是24个"; not a rate: "每天需要读30页"):
# 所以 / 因此 / 可以 / 能 / 最后 / 平均 / 需要 / 就是 / 得到 ..., or what is left or is there now (还剩 / 剩下 /
# 还有 / 现在有: group "left"), or a calculation's result (12-5=7: group "calc"); the answer follows the word
_CONCLUSION = re.compile(
    rf"(?:^|(?<=[{_CLAUSE_END}]))[\s*_]*(?:(?P<calc>[^{_CLAUSE_END}]*[=＝][\s*_]*(?:[-\d]|负)[^{_CLAUSE_END}]*)"
    rf"|(?:[^{_CLAUSE_END}]{{0,6}}?平均|(?!每)[^{_CLAUSE_END}]{{0,6}}?"
    rf"(?:所以|因此|因而|于是|从而|那么|故(?!事)|可以|可得|可知|能|最后(?!一)|最终|需要?|就是|得到|(?P<left>{_LEFT}|还有|现在还?有?)))"
    rf"(?P<answer>[^{_CLAUSE_END}]*))")
# a number described with words is no conclusion ("还有3个是红的")
_DESCRIBED = re.compile(r"\d\s*[\u4e00-\u9fff]?\s*[是为](?![\s*_]*(?:[-+\d]|负))")
# what is left concludes nothing where the total is what there was at first ("原来一共有12个，吃了5个，还剩7个": 12)
_AT_FIRST = re.compile(r"原来|原有|本来|起初|最初|开始时")
# a conclusion in an aside or in a check of the answer states none ("（吃了5个，还剩7个）", "验证：吃了5个，还剩7个")
_ASIDE = re.compile(r"[（(][^）)]*$")
_CHECKING = re.compile(r"(?:验证|验算|检验|检查|核对)[^。！？!?\n]*$")
# an aside: in full-width brackets, or in ASCII ones holding Chinese text (not LaTeX's \( \))
_CJK_ASIDE = re.compile(r"（[^（）]*）|(?<!\\)\([^()]*[\u4e00-\u9fff][^()]*(?<!\\)\)")
# a run without Chinese characters or clause marks that holds a digit or LaTeX
_RUN = re.compile(r"[^\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff" + _CLAUSE_END + r"：（）]+")
_HAS_MATHS = re.compile(r"[\d\\]")
# a pause before a number is no part of it ("答案是……42")
_LEADING_ELLIPSIS = re.compile(r"^(?:…+|⋯+|\.{3,})[\s*_]*")
# where a calculation gives its result: = or 是 / 为 / 等于 between numbers, in digits or in the Chinese numerals an
# answer reads ("三箱为二十四个" -> 二十四个, as "3箱为24个" -> 24个; "三箱为24个" too; "3乘8等于24" -> 24)
_IS_BETWEEN_NUMERALS = (rf"(?<=[\d零〇一二两三四五六七八九十百千万亿])[\u4e00-\u9fff]?(?:{_IS}|等于)"
                        r"(?=[\s*_]*(?:[-+\d]|负|[零〇一二两三四五六七八九十]))")
_RESULT = re.compile(f"=|{_IS_BETWEEN_NUMERALS}")
_DELIMITED_LATEX = re.compile(r"\\\(.*?\\\)|\\\[.*?\\\]")
_MULTIPLIED = re.compile(r"(-?\d+(?:\.\d+)?)\s*([万亿千百])(?!米|克|瓦|卡|焦|帕|赫|伏|分之)")
_FACTOR = {"百": 10 ** 2, "千": 10 ** 3, "万": 10 ** 4, "亿": 10 ** 8}
# Chinese numerals count as a number only at the end of the answer or before a measure word: 一样, 一起 are words,
# and so are the few where 一 and a measure word make one (一本正经, 一块儿 "together", 一头雾水, 一条心, 一次性)
_NUMERALS = re.compile(r"^(?:约|大约|大概|共|总共)?\s*(?!一(?:本正经|块儿|头雾水|条心|次性))(负?[零〇一二两三四五六七八九十百千万亿点]+)"
                       r"(?=$|[^\u3400-\u4dbf\u4e00-\u9fff]|[个只张本元块人次天年月日岁米克斤份件条道辆头匹位名架台棵朵支根颗层页"
                       r"分秒倍度种箱盒瓶袋包杯双组套束串桶罐碗筐篮枚粒吨升亩周题节把间堂座所家扇片首篇封幅户项场局遍趟圈届]"
                       r"|小时|公[里斤顷]|[厘毫分]米|平方|立方|毫升)")
# full-width digits and maths signs; the full-width comma stays: it ends a clause, it separates no thousands
_FULL_WIDTH_PUNCTUATION = str.maketrans({**{chr(0xFF10 + digit): str(digit) for digit in range(10)},
                                         "：": ":", "（": "(", "）": ")", "＝": "=", "－": "-", "＋": "+", "／": "/",
                                         "．": ".", "％": "%"})


def has_cjk(text: str) -> bool:
    return bool(CJK.search(text))


def _multiplied(text: str) -> str:
    """3万 -> 30000, 1.5千 -> 1500: digits times the Chinese order of magnitude written right after them."""
    def times(match: re.Match) -> str:
        from decimal import Decimal

        value = Decimal(match.group(1)) * _FACTOR[match.group(2)]
        return format(value.normalize(), "f")

    return _MULTIPLIED.sub(times, text)


def chinese_numeral(text: str) -> str | None:
    """The value of Chinese numerals at the start of ``text`` ("二十个" -> "20"), by cn2an; None when there are none
    or cn2an cannot read them."""
    found = _NUMERALS.match(text.strip())
    if not found:
        return None
    import cn2an  # the accuracy rewards check it is there when they are built

    try:
        value = cn2an.cn2an(found.group(1), "smart")
    except (ValueError, KeyError, TypeError):
        return None
    return format(value, "g") if isinstance(value, float) and not value.is_integer() else str(int(value))


# fractions and percentages in words: 四分之三 -> 3/4, 百分之二十五 -> 25%, 1又1/2 -> 3/2
_NUMBER_WORD = r"(\d+(?:\.\d+)?|[零〇一二两三四五六七八九十百千万点]+)"
_PERCENT = re.compile("百分之" + _NUMBER_WORD)
_FRACTION = re.compile(_NUMBER_WORD + "分之" + _NUMBER_WORD)
_MIXED = re.compile(r"(\d+)\s*又\s*(\d+)\s*/\s*(\d+)")


def _as_digits(word: str) -> str | None:
    return word if word[0].isdigit() else chinese_numeral(word)


def _fractions_in_digits(text: str) -> str:
    def percent(match: re.Match) -> str:
        value = _as_digits(match.group(1))
        return f"{value}%" if value is not None else match.group(0)

    def fraction(match: re.Match) -> str:
        denominator, numerator = _as_digits(match.group(1)), _as_digits(match.group(2))
        return f"{numerator}/{denominator}" if None not in (numerator, denominator) else match.group(0)

    def mixed(match: re.Match) -> str:
        whole, numerator, denominator = (int(group) for group in match.groups())
        return f"{whole * denominator + numerator}/{denominator}" if denominator else match.group(0)

    return _MIXED.sub(mixed, _FRACTION.sub(fraction, _PERCENT.sub(percent, text)))


# 负 before a number is its minus (负3 -> -3, 负二分之一 -> -1/2), but not in 正负3 (plus or minus) nor in a
# score of games (胜7场负3场: 3 lost)
_MINUS = re.compile(r"(?<![正胜\d])负\s*(?=\d)(?!\d+(?:\.\d+)?\s*[场局盘轮])")
# 正负3 and ±3 are both roots, as math-verify reads \pm 3 ({-3, 3}, a gold of ±3), not 3
_PLUS_MINUS = re.compile(r"(?:正负|±)\s*(?=\d)")


def _in_digits(text: str) -> str:
    """Fractions, percentages, signs and orders of magnitude in words as digits: 负二分之一 -> -1/2, 3万 -> 30000,
    正负3 -> \\pm 3."""
    text = _PLUS_MINUS.sub(r"\\pm ", _fractions_in_digits(text))
    return _multiplied(_MINUS.sub("-", text))


# a number that a property names is no answer: 3的倍数, 12的因数, 大于5, 小于等于2, 不足5, 60分以上, 100以内, 一个偶数
# (a bound that may be met states one: 至少 / 最多 / 不少于 / 不多于 / 不超过 / 不低于, "至少需要3辆"; 不足 is 少于)
_NAMED = re.compile(r"(?<=[大小多少]于)(?<!不[多少]于)(?:等于)?\s*-?\d+(?:\.\d+)?|(?<=不足)\s*-?\d+(?:\.\d+)?"
                    r"|-?\d+(?:\.\d+)?(?=\s*(?:的?(?:公?倍数|公?因数|公?约数|质因数)|[个人只元岁分次天本]?(?:以上|以下|以内)))"
                    r"|(?<=被)\s*\d+(?=\s*整除)|(?<=打)\s*\d+(?:\.\d+)?(?=\s*折)"  # 能被3整除, 打8折
                    r"|一(?=个[\u4e00-\u9fff]{0,3}数(?![学字据量目]))")


# a range names no one number either: 1-2个, 3~5天, 3至5天, 10-12月 (rising: 5-3个 is a subtraction; a - only before a
# unit: 1-2 and 12-5=7 are sums, 2023-10-01 a date)
_RANGE = re.compile(r"(?<![\d.+\-−×÷*/=^])(\d+(?:\.\d+)?)\s*"
                    r"(?:[~～〜至到]|[-–—](?=\s*\d+(?:\.\d+)?\s*(?!等于|[是为])[\u4e00-\u9fff%]))\s*(\d+(?:\.\d+)?)(?![\d.])")


def _rising(match: re.Match) -> bool:
    """A _RANGE match whose second number is the larger: a range (a falling 5-3 is a subtraction)."""
    return float(match.group(1)) < float(match.group(2))


def _unnamed(text: str) -> str:
    """``text`` with the numbers a property names hidden (3的倍数 -> 某的倍数), and its ranges (1-2个 -> 某个): no run
    reads them."""
    def range_hidden(match: re.Match) -> str:
        return "某" if _rising(match) else match.group(0)

    return _RANGE.sub(range_hidden, _NAMED.sub("某", text))


def _number_run(run: str) -> str:
    """A run holding a number without the marks around it: "**42**" -> "42", "……42" -> "42"."""
    return _LEADING_ELLIPSIS.sub("", run.strip(" *_:")).strip(" *_:")


def _read(segment: str) -> str | None:
    """The answer in an anchored or total segment: its first run holding a number, or its Chinese numerals."""
    segment = _unnamed(_in_digits(segment.translate(_FULL_WIDTH_PUNCTUATION))).strip(" *_:")
    if not segment:
        return None
    if segment.startswith("\\boxed") or segment.startswith("$"):
        return segment
    delimited = _DELIMITED_LATEX.match(segment)  # \(x=3\): math-verify reads it whole
    if delimited:
        return delimited.group(0)
    # a calculation stated as the answer ends in its result: 1.2公顷=12000平方米, 12+8=20, 3箱为24个 (an aside in
    # brackets aside; LaTeX's \( \) are no brackets)
    without_asides = re.sub(r"(?<!\\)\([^)]*\)", "", segment)
    result = _RESULT.split(without_asides)[-1].strip()
    if result != segment and (_HAS_MATHS.search(result) or chinese_numeral(result) is not None):
        segment = without_asides = result
    if _UNWORKED_ANSWER.search(without_asides):  # 2乘5 states neither 2 nor 5 (nor 10)
        return ""
    numeral = chinese_numeral(segment)
    if numeral is not None and not re.match(r"^\s*(?:约|大约|大概)?\s*-?\d", segment):
        return numeral
    for run in _RUN.findall(segment):
        if _HAS_MATHS.search(run):
            return _number_run(run)
    verb = _VERB.match(segment)  # 要付两千五百元, 需要三天读完: numerals after a short verb
    return chinese_numeral(segment[verb.end():]) if verb else None


# a short verb before Chinese numerals ("要付两千五百元"); not an ordinal (第一名)
_VERB = re.compile(r"^[\s*_]*(?:(?![零〇一二两三四五六七八九十百千万亿第])[\u4e00-\u9fff]){1,3}?(?=[零〇一二两三四五六七八九十])")


def _last_number(text: str, unnamed: bool = True) -> str | None:
    """The last run of ``text`` without Chinese characters that holds a number or LaTeX ("有20张" -> "20"), not one
    that a property names (``unnamed``: 3的倍数)."""
    plain = _in_digits(text.translate(_FULL_WIDTH_PUNCTUATION))
    plain = _unnamed(plain) if unnamed else plain
    runs = [_number_run(run) for run in _RUN.findall(plain) if _HAS_MATHS.search(run)]
    return runs[-1] if runs else None


def _corrections(text: str, values_only: bool = True) -> list[tuple[int, int, str, int]]:
    """(start, end, the answer's clause, rank) of each self-correction in ``text``: "结果是42吗？不，应为41" -> 41.

    A correction replaces the last anchor or total before it and takes its rank, whatever working came between
    ("答案是42。验算：6×7=42，42-1=41。不对，应为41" -> 41); with neither before it, the number before it, and a later
    number outranks it (``_outranking``: "有5个吗？不，应为6个。又买了3个，现在有9个" -> 9). With no answer stated before it, it corrects
    nothing. ``values_only``: a correction that states a property (应为3的倍数) states nothing; a text answer
    (anchored_text) takes it as it is (应为奇数)."""
    # what was stated where: (end, rank); an anchor counts even when its answer is words ("答案是巴黎吗")
    stated = [(match.end(), _TOTAL_RANK if match["step"] else _ANCHOR_RANK) for match in _ANCHOR.finditer(text)
              if match["answer"].strip()]
    stated += [(match.end(), _TOTAL_RANK) for match in _TOTAL.finditer(text) if _read(match.group(1)) is not None]
    found = []
    for match in _CORRECTION.finditer(text):
        # 应为5的2倍，即10: 10; a text answer is taken as it is, as an anchor's is
        answer = _restated(text, match.end("answer"), match["answer"]) if values_only else match["answer"]
        if match["mark"] in ("？", "?") or (values_only and _PROPERTY.search(answer)):  # asked, or no value
            continue
        mark = text[match.start() - 1]
        clause = re.split(f"[{_CLAUSE_END},]", text[:match.start() - 1])[-1]
        # after a no, a question that proposed an answer or a hesitation (42……应为41)
        asked = mark in "？?" and not _ASKS_FOR.search(clause) and (_PROPOSED.search(clause)
                                                                     or _ANCHOR.search(clause + mark))
        hesitated = mark == _ELLIPSIS and not clause.strip(" *_")
        if not (asked or hesitated or _BARE_NO.fullmatch(clause)):
            continue
        # what it corrects: the last anchor or total (an anchor where both end), else a number before it
        _end, rank = max((where for where in stated if where[0] <= match.start()),
                         key=lambda where: (where[0], -where[1]), default=(0, None))
        if rank is None and _last_number(text[:match.start()]) is not None:
            rank = _NUMBER_RANK
        if rank is None:  # no answer stated before it
            continue
        found.append((match.start(), match.end(), answer, rank))
        stated.append((match.end(), rank))
    return found


_ELLIPSES = re.compile(r"(?:…+|⋯+|\.{3,})(?=[\s*_]*[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff])")


def _ellipses(text: str) -> str:
    """Each ellipsis before Chinese text (……, …, ⋯, ...) as _ELLIPSIS, one a character: it ends a clause."""
    return _ELLIPSES.sub(lambda match: _ELLIPSIS * len(match.group(0)), text)


def _outranking(text: str, end: int) -> str | None:
    """The number after a corrected number (its correction ends at ``end``) that outranks it: the last one after its
    sentence, else the last in a clause of its sentence that concludes (_CONCLUDES); never one in a clause where 是
    describes a number (_DESCRIBES: 其中2个是红色的)."""
    rest = text[end:]
    sentence_end = _SENTENCE_END.search(text[end - 1:end] + rest)  # its own mark may end the sentence
    split = max(sentence_end.start() - 1, 0) if sentence_end else len(rest)
    for clause in reversed(re.split(f"[{_CLAUSE_END}]", rest[split:])):  # not at "," (1,000)
        number = _last_number(clause) if not _DESCRIBES.search(clause) else None
        if number is not None:
            return number
    own = rest[:split]
    for clause in reversed(list(re.finditer(f"[^{_CLAUSE_END},]+", own))):
        concludes = _CONCLUDES.search(clause.group()) and not _DESCRIBES.search(clause.group())
        number = _last_number(_restated(own, clause.end(), clause.group())) if concludes else None
        if number is not None:
            return number
    return None


# an answer that names its value through an operand ("5的2倍", "20的一半") or a sum not worked out ("3+4", "2乘5") gives
# way to the clause that restates it ("答案是5的2倍，即10"; "结果是3+4，也就是7"), whatever stated it
_OPERATION = r"的|[×÷*·]\s*\d|\\(?:times|div|cdot)|(?:乘以?|除以|加上?|减去?)\s*\d"
_UNWORKED = re.compile(rf"\d\s*(?:{_OPERATION}|[+\-−＋－]\s*\d)")
# ... and stated as the whole answer, one states no single number: not its first operand (答案是2乘5 read 2, 5的2倍 5),
# nor its value, as a sum left unworked scores nothing (answers._sum_still_to_do); + and - are left to math-verify and
# that rule, which read them whole (and 2023-10-01 is a date)
_UNWORKED_ANSWER = re.compile(rf"\d\s*(?:{_OPERATION})")
_RESTATED = re.compile(rf"[，,][\s*_]*{_RESTATES}说?[\s*_:：]*(?:是|为|等于)?([^{_CLAUSE_END}]*)")


def _restated(text: str, end: int, answer: str) -> str:
    """``answer`` (it ends at ``end`` in ``text``), or the clause right after it that restates it where ``answer`` is
    unworked and the restatement reads ("5的2倍，即10" -> "10"; "10，即5的2倍" -> "10")."""
    restated = _RESTATED.match(text, end)
    if restated and _UNWORKED.search(answer) and _read(restated.group(1)) is not None:
        return restated.group(1)
    return answer


def _without_restated_expressions(text: str) -> str:
    """``text`` without each restatement that is an expression of the number before it: it says how that number came
    about and states no later one ("所以是10，即5的2倍" -> "所以是10"; "即2乘5", "即3+7" likewise); a restatement that
    is a value stays, and wins over an unworked answer (_restated: "结果是3+4，也就是7" -> 7)."""
    def kept(match: re.Match) -> str:
        unworked = _UNWORKED.search(_RESULT.split(match.group(1))[-1])  # 即2×5=10 is worked out: its result stays
        restates_a_number = _last_number(re.split(f"[{_CLAUSE_END}]", text[:match.start()])[-1]) is not None
        return "" if unworked and restates_a_number else match.group(0)

    return _RESTATED.sub(kept, text)


def _totals(text: str) -> list[tuple[int, str]]:
    """(start, answer) of each total, none in an aside in brackets ("（3箱共12个）"), and of each conclusion after the
    last one: it outranks the total as a later total would (the total a given: "一共有12个，吃了5个，还有7个" -> 7)."""
    totals = [(match.start(), match.end(), _restated(text, match.end(), match.group(1)))
              for match in _TOTAL.finditer(text) if not _ASIDE.search(text[:match.start()])]
    # a bare 结果 may be a step's ("3×4的结果是12"): a later conclusion outranks it, as it does a total
    totals += [(match.start(), match.end(), _restated(text, match.end(), match["answer"]))
               for match in _ANCHOR.finditer(text) if match["step"] and not _ASIDE.search(text[:match.start()])]
    if totals:
        start, end, _segment = max(totals)
        at_first = _AT_FIRST.search(re.split(r"[。！？!?\n]", text[:start])[-1])
        totals += [(match.start(), match.end(), match["calc"] or _restated(text, match.end(), match["answer"]))
                   for match in _CONCLUSION.finditer(text, end)
                   if not (match["left"] and at_first) and not _ASIDE.search(text[end:match.start()])
                   and not _CHECKING.search(text[end:match.start()]) and not _DESCRIBED.search(match.group(0))]
    return [(start, segment) for start, _end, segment in totals]


# a check or an explanation after a stated answer states no new answer: from its heading (验证 / 检验 / 验算 / 检查 /
# 核对, perhaps after 我们来 / 再 ..., or 解析： / 解释： / 说明：) to a sentence that concludes again (所以 / 答案 / 答：)
_CHECK = re.compile(rf"(?:^|(?<=[{_CLAUSE_END}：:]))[\s*_#>\-]*(?:我们|让我们|我|再|来|下面|现在|接下来|最后)*"
                    r"(?:验证|检验|验算|检查|核对|(?:解析|解释|说明)(?=[\s*_]*[:：]))")
_CHECK_ENDS = re.compile(r"(?<=[。！？!?\n])[\s*_#>\-]*(?:所以|因此|综上|最终|答案|答[\s*_]*[:：])")
# a number negated is no answer ("有17个，不是12个", "而不是12个", "并非12个"; 是不是 asks)
_NEGATED = re.compile(rf"(?<!是)(?:不是|并非|而非)[^{_CLAUSE_END}]*")


# a list item: "- 总共：20个", "2. 第二天：8个"
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*•+]|\d+[.、)）])[ \t]")


def _anchored(text: str, match: re.Match) -> str:
    """An anchor's answer; where a list on the lines after it answers (最终答案：\\n- 第一天：12个\\n- 总共：20个),
    the list read as a text of its own (20, its total; else its last number, as math-verify reads it in English)."""
    answer = match["answer"]
    if "\n" in text[match.start():match.start("answer")] and _LIST_ITEM.match(answer):
        lines = text[match.start("answer"):].split("\n")
        items = next((lines[:index] for index, line in enumerate(lines) if not _LIST_ITEM.match(line)), lines)
        listed = _stated("\n".join(items))
        if listed is not None:
            return listed
    return _restated(text, match.end(), answer)


def _checks_hidden(text: str) -> str:
    """``text`` with each check or explanation after a stated answer blanked out (its length kept)."""
    hidden, searched = text, 0
    for match in _CHECK.finditer(text):
        # a number before it is enough (_stated here would recurse through every earlier check: exponential)
        if match.start() < searched or _last_number(text[:match.start()]) is None:
            continue
        ends = _CHECK_ENDS.search(text, match.end())
        searched = ends.start() if ends else len(text)
        hidden = hidden[:match.start()] + re.sub(r"[^\n]", " ", hidden[match.start():searched]) + hidden[searched:]
    return hidden


def stated_answer(text: str) -> str | None:
    """The last answer a text with Chinese characters states, as text math-verify reads; None for a text without
    Chinese characters (read as before), with a \\boxed{} that holds none (math-verify reads it first) or with no
    number; "" for one whose only numbers name a property ("答案是3的倍数"): no answer."""
    if not has_cjk(text):
        return None
    return _boxed(text) if "\\boxed" in text else _stated(text)


_BOXED = re.compile(r"\\boxed\s*\{((?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\})*)\}")
_TEXT_WRAPPER = re.compile(r"\\(?:text|textbf|textrm|mathrm|mbox)\s*\{([^{}]*)\}")


def _boxed(text: str) -> str | None:
    """The last \\boxed{} read by the Chinese rules where it holds Chinese (\\boxed{36元}, \\boxed{十七}, \\boxed{负3}:
    math-verify reads none of them); None for a box without Chinese, which math-verify reads as before."""
    boxes = _BOXED.findall(text)
    content = _TEXT_WRAPPER.sub(r"\1", boxes[-1]) if boxes else ""
    return _read(content) if has_cjk(content) else None


def _stated(text: str) -> str | None:
    text = _without_restated_expressions(_ellipses(text))
    corrections = _corrections(text)
    # what a check states and a negated number are no answer (a correction in a check still is: "验算：...不对，应为41")
    said = text
    text = _NEGATED.sub(lambda match: re.sub(r"[\d０-９]", "某", match.group(0)), _checks_hidden(text))
    anchors = [(match.start(), _anchored(text, match)) for match in _ANCHOR.finditer(text) if not match["step"]]
    for rank, found in ((_ANCHOR_RANK, anchors), (_TOTAL_RANK, _totals(text))):
        found += [(start, segment) for start, _end, segment, its_rank in corrections if its_rank == rank]
        for _where, segment in sorted(found, reverse=True):
            answer = _read(segment)
            if answer is not None:
                return answer
    # a correction of a number is the answer unless a number comes after it, other than in its explanation
    for _start, end, segment, rank in reversed(corrections):
        answer = _read(segment) if rank == _NUMBER_RANK else None
        if answer is not None:
            return answer if _EXPLAINED.match(text[end:]) else _outranking(text, end) or answer
    # Chinese numerals in a conclusion after the last number ("每天读60页，所以需要三天读完" -> 3)
    for match in reversed(list(_CONCLUSION.finditer(text))):
        if re.search(r"\d", text[match.start():]):
            break
        numeral = _read(match["answer"]) if match["answer"] else None
        if numeral:
            return numeral
    # numbers in an aside in brackets explain the answer stated before it ("有17个。（3箱共12个，加上原来的5个）")
    answer = _last_number(_CJK_ASIDE.sub(" ", text)) or _last_number(text)
    if answer is None and _last_number(said, unnamed=False) is not None:
        return ""  # its only numbers name properties or are negated ("答案是3的倍数", "不是12个"): it states no answer
    return answer


def anchored_text(text: str) -> str | None:
    """The words after the last anchor ("答案是巴黎" -> "巴黎"), a correction of one included ("答案是巴黎吗？不，应为伦敦"
    -> "伦敦"), for a gold answer that is text, not a number."""
    if not has_cjk(text):
        return None
    text = _ellipses(text)
    found = [(match.start(), match["answer"]) for match in _ANCHOR.finditer(text)]
    found += [(start, segment) for start, _end, segment, rank in _corrections(text, values_only=False)
              if rank == _ANCHOR_RANK]
    return max(found)[1].strip() if found else None


def is_range(gold: str) -> bool:
    """Whether a gold answer is a range of numbers ("3~5天", "1-2个", "3至5天"; rising, with its unit if any): no
    number stands for it, so it is compared as text (an answer must state the range; "答案是3天" does not)."""
    gold = gold.strip().rstrip("。.")
    match = _RANGE.match(gold)
    return match is not None and _rising(match) and not re.search(r"\d", gold[match.end():])


def gold_number(gold: str) -> str | None:
    """A gold answer written with Chinese numerals, an order of magnitude, a fraction in words or a sign in words
    ("二十", "3万", "四分之三", "百分之二十五", "负3", "正负3" -> "\\pm 3") as digits; None for anything else."""
    if not has_cjk(gold):
        return None
    stripped = gold.strip().rstrip("。.")
    numeral = chinese_numeral(stripped)
    if numeral is not None and _NUMERALS.match(stripped).end() == len(stripped):
        return numeral
    digits = _in_digits(stripped)
    return digits if digits != stripped and not has_cjk(digits) else None
