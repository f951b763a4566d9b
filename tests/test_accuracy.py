"""accuracy and reasoning_accuracy: answer forms pinned with the scores the mathematics says they deserve."""

import threading
import warnings

import pytest

from grpo_skill import RewardError, plugins


def accuracy(completions, answers, **params):
    reward = plugins.get_reward("accuracy").build(params=params)
    return reward(prompts=[""] * len(completions), completions=completions, answer=answers)


FORMS = [
    # (final answer after </think>, gold, score)
    ("42", "42", 1.0),
    ("The answer is 42.", "42", 1.0),
    ("42.0", "42", 1.0),
    ("12.50", "12.5", 1.0),
    (r"\boxed{42}", "42", 1.0),
    (r"$\boxed{42}$", "42", 1.0),
    (r"\boxed{\frac{1}{2}}", "1/2", 1.0),
    (r"\boxed{\frac{1}{2}}", "0.5", 1.0),
    ("1/2", "1/2", 1.0),  # a fraction gold can match (the old extractor never returned a fraction)
    ("0.5", "1/2", 1.0),
    (".5", "0.5", 1.0),
    ("0.125", "1/8", 1.0),
    ("-1/2", "-0.5", 1.0),
    ("-0.5", r"-\frac{1}{2}", 1.0),
    (r"\frac{3}{4}", "3/4", 1.0),
    ("0.75", "3/4", 1.0),
    (r"$\dfrac{3}{4}$", "0.75", 1.0),
    ("0.33", "1/3", 0.0),  # not equal, only close
    ("1,000", "1000", 1.0),
    ("1000", "1,000", 1.0),
    ("1,234,567", "1234567", 1.0),
    ("$1,000,000", "1000000", 1.0),
    ("\u22125", "-5", 1.0),  # Unicode minus
    ("\u20137", "-7", 1.0),  # an en dash used as a minus
    ("-5", "5", 0.0),
    ("Answer: -3", "-3", 1.0),
    ("1e3", "1000", 1.0),
    ("1.5e-3", "0.0015", 1.0),
    (r"$3 \times 10^{2}$", "300", 1.0),
    ("3 × 10^2", "300", 1.0),
    (r"$10^{3}$", "1000", 1.0),
    ("2^{10}", "1024", 1.0),  # LaTeX without $...$
    (r"2\sqrt{2}", r"2\sqrt{2}", 1.0),
    (r"$2\sqrt{2}$", r"\sqrt{8}", 1.0),
    (r"\boxed{42} (found in 3 steps)", "42", 1.0),  # the 3 in the remark is no answer
    ("5 (pages 4-5)", "5", 1.0),  # nor is the range 4-5 a minus
    ("50%", "50%", 1.0),
    ("50%", "50", 1.0),
    ("50 percent", "50%", 1.0),
    ("3 apples", "3", 1.0),
    ("18 dollars", "18", 1.0),
    ("It costs $18.", "18", 1.0),
    ("It costs \uffe536.", "36", 1.0),  # a full-width yen sign
    (r"It costs \$18.", "18", 1.0),
    (r"\$1,000", "1000", 1.0),
    ("\uff11\uff12", "12", 1.0),  # full-width digits
    ("x = 4", "4", 1.0),
    ("x=4", "x=4", 1.0),
    (r"$x^2+2x+1$", "(x+1)^2", 1.0),  # equal as expressions
    (r"$\{1, 2\}$", r"\{2, 1\}", 1.0),  # equal as sets
    (r"$\pi$", r"\pi", 1.0),
    ("41", "42", 0.0),
    ("", "42", 0.0),
    (r"\boxed{}", "0", 0.0),
    ("So 6*7 = 42, hence 41 is wrong; the answer is 42.", "42", 1.0),
    ("I got 7 but the answer is 8", "8", 1.0),
    ("The answer is 42, found after checking 3 cases", "42", 1.0),
    (r"The final answer is $\boxed{5}$. I checked 3 other values.", "5", 1.0),
    ("2 and 3", "3", 1.0),  # no anchor: the last number
    # a sum restated, not worked out, is no answer (math-verify alone evaluates it and calls it right)
    ("2 + 8", "10", 0.0),
    ("The sum is 2 + 8.", "10", 0.0),
    ("10 - 0", "10", 0.0),
    ("2 + 8 = 10", "10", 1.0),
    ("The answer is 2 * 5.", "10", 0.0),  # a product too, as the Chinese 答案是2乘5 is
    (r"The answer is $2 \times 5$.", "10", 0.0),
    (r"$\boxed{2 \cdot 5}$", "10", 0.0),
    (r"2 \times 5 = 10", "10", 1.0),
    ("The answer is 2×5.", "2", 0.0),  # × as math-verify does not read it: it took the 2
    ("The answer is 2×5.", "10", 0.0),
    ("2×5=10", "10", 1.0),
    ("The answer is 3×10^2.", "300", 1.0),
    (r"The answer is $2 \times 10^3$.", "2000", 1.0),  # a number as written: not a product to work out
    ("The answer is 3/4.", "0.75", 1.0),
    ("The answer is **1/4**.", r"\frac{1}{4}", 1.0),  # Markdown bold: math-verify alone read 1
    ("**Answer:** 1/4", "1/4", 1.0),
    ("The answer is **1/3**.", r"\frac{1}{4}", 0.0),
    ("__42__", "42", 1.0),
    ("The final answer: 2 + 8 equals 10.", "10", 1.0),  # the result after the sum math-verify picked
    ("The final answer: 2 + 8 equals 11.", "10", 0.0),
    # text answers: a normalised match, no maths
    ("Paris", "Paris", 1.0),
    ("paris.", "Paris", 1.0),
    ("The capital of France is Paris.", "Paris", 1.0),
    ("It is not Paris.", "Paris", 0.0),
    ("London", "Paris", 0.0),
    ("The answer is (B)", "B", 1.0),
    ("yes", "Yes", 1.0),
    ("Monday", r"\text{Monday}", 1.0),
]


@pytest.mark.parametrize("answer, gold, expected", FORMS, ids=[f"{a!r}~{g!r}" for a, g, _ in FORMS])
def test_answer_forms(answer, gold, expected):
    assert accuracy(["Let me work it out.</think>" + answer], [gold]) == [expected]


def test_there_are_at_least_forty_forms():
    assert len(FORMS) >= 40


# Chinese answers: the last stated answer, read before math-verify (plugins/rewards/cjk.py)
FORMS_ZH = [
    ("答案：20", "20", 1.0),
    ("答案:20", "20", 1.0),
    ("答案是20。", "20", 1.0),
    ("最终答案是 20", "20", 1.0),
    ("结果为１２", "12", 1.0),  # full-width digits
    ("答案：１２。", "13", 0.0),
    ("有20张", "20", 1.0),
    ("所以一共有20个苹果。", "20", 1.0),
    ("小明先有5个，又买了3个，所以共有8个。", "8", 1.0),
    ("共有8个苹果，每个3元。", "8", 1.0),  # the total, not the price after it
    ("一共有24个学生，每组4人，可以分6组。", "6", 1.0),  # ... but a conclusion after it
    ("一共有24个学生，每组4人，所以可以分成6组。", "24", 0.0),
    ("一共有20人，能被4整除。", "20", 1.0),  # a divisor names a property, no conclusion
    ("合计100元，可以打8折。", "100", 1.0),  # nor a discount
    # what is left after a total concludes, as 所以 does (还剩 / 剩下 / 剩余); the remaining ones described do not
    ("共有12个苹果，吃了5个，还剩7个", "7", 1.0),
    ("共有12个苹果，吃了5个，还剩7个", "12", 0.0),
    ("一共有12个苹果，吃了5个，剩下7个。", "7", 1.0),
    ("总共有20元，花了8元，剩余12元。", "12", 1.0),
    ("一共有12个，剩下的3个是红的。", "12", 1.0),
    # ... not where the total is what there was at first, nor in an aside or a check
    ("原来一共有12个，吃了5个，还剩7个", "12", 1.0),
    ("原来一共有12个苹果（吃了5个，还剩7个）", "12", 1.0),
    ("一共有12个苹果，验证：吃了5个，还剩7个", "12", 1.0),
    ("共有3箱，每箱8个，总数为24个", "24", 1.0),  # a later total, as 总数 states it
    ("共有3箱，每箱8个，总数是24个。", "3", 0.0),
    ("一共有3箱，总数的一半是12", "12", 1.0),  # ... and a part of the total, stated later: 一共有3箱 is a given
    ("一共有3箱，总数的一半是12", "3", 0.0),
    ("一共有3箱，总数的三分之一为8个", "8", 1.0),
    ("一共有3箱，总数的2倍是48", "48", 1.0),  # ... or a multiple of it
    ("一共有3箱，总数的2倍是48", "3", 0.0),
    ("一共有3箱，总数的3倍为72个", "72", 1.0),
    ("一共有三箱，总数的两倍是六箱", "6", 1.0),
    ("=20，答案：22", "20", 0.0),  # the stated answer is 22, whatever came before
    ("=20，答案：22", "22", 1.0),
    ("答案是20，不对，答案是21。", "21", 1.0),  # the last stated answer
    ("答案是20，不对，答案是21。", "20", 0.0),
    ("5+3=8，所以答案是8个", "8", 1.0),
    ("答案是约20个", "20", 1.0),
    ("答案：x=4", "4", 1.0),
    ("答案：1.2公顷=12000平方米", "12000平方米", 1.0),  # a calculation as the answer: its result
    ("答案：12+8=20", "20", 1.0),
    ("答案：12+8=21", "20", 0.0),
    ("答案：20张（=2×10张）", "20", 1.0),  # an aside in brackets is no result
    ("答案是5的2倍，即10", "10", 1.0),  # an answer through an operand (5的): its restatement is the answer
    ("答案是20的一半，也就是10个", "20", 0.0),
    # ... as after any anchor, a total, a conclusion after a total or a correction, where the answer is an operand or
    # a sum not worked out; a plain answer stays, and 即 in a word (即使, 立即) restates nothing
    ("结果是3+4，也就是7", "7", 1.0),
    ("结果是3+4，即7个", "7", 1.0),
    ("结果是10，也就是5的2倍", "10", 1.0),
    ("一共有3+4个，即7个", "7", 1.0),
    ("共有5个红球，所以白球是5的2倍，即10个", "10", 1.0),
    ("所以是5的2倍，即10", "10", 1.0),
    ("答案是6吗？不，应为5的2倍，即10", "10", 1.0),
    ("有6个吗？不，应为5的2倍，也就是说10个", "10", 1.0),
    ("有5个吗？不，应为6个，所以总数是6的2倍，即12个。", "12", 1.0),
    # a restatement that is an expression says how the number before it came about: it states no later number
    ("所以是10，即5的2倍", "10", 1.0),
    ("所以是10，即5的2倍", "2", 0.0),
    ("所以是10，即2乘5", "10", 1.0),
    ("所以是10，也就是3+7", "10", 1.0),
    ("有5个吗？不，应为6个。所以是10，即5的2倍", "10", 1.0),
    ("答案是2乘5，即10", "10", 1.0),  # 乘 / 加 / 减 / 除以 between numbers: a sum not worked out
    # ... and with no restatement it states no single number, whatever number came before it: not its first operand,
    # nor its value (2*5, which math-verify works out, scores 10 nothing, as 2+3 scores 5 nothing)
    ("答案是2乘5", "2", 0.0),
    ("答案是2×5", "2", 0.0),
    ("答案是2*5", "10", 0.0),
    ("答案是5的2倍", "5", 0.0),
    ("答案是3乘8等于24", "24", 1.0),  # ... but worked out with 等于 it ends in its result
    ("答案是3×8等于24", "3", 0.0),
    ("答案：三乘八等于二十四", "24", 1.0),
    ("一共有3箱，答案是3乘8", "3", 0.0),
    ("答案是5的2倍，即使多算1个也不对", "1", 0.0),
    ("有5个吗？不，应为6个。即使又买了3个，也只有9个。", "9", 1.0),
    ("答案是12，即使再加1个也不够", "12", 1.0),
    ("一共有12个，立即分给3人", "12", 1.0),
    ("答案是 3/4", "0.75", 1.0),
    ("答案是 $\\frac{1}{2}$。", "1/2", 1.0),
    ("最终答案：\\boxed{20}", "20", 1.0),
    ("答案是-5", "-5", 1.0),
    ("答案是-5", "5", 0.0),
    ("共3万人", "30000", 1.0),  # 万 multiplies
    ("答案是1.5万", "15000", 1.0),
    ("一共3千元", "3000", 1.0),
    ("我走了3千米，答案是3000米", "3000", 1.0),  # 千米 is a unit, and the anchor wins anyway
    ("答案是3千米", "3000", 0.0),  # 3 km is no 3000
    ("答案是二十", "20", 1.0),  # Chinese numerals after an anchor
    ("答案是两万三千", "23000", 1.0),
    ("一起买了5个", "1", 0.0),  # 一 in 一起 is a word, not the answer
    ("答案是一样的，都是20", "20", 1.0),  # nor in 一样: the anchor states no number, the last number is 20
    ("答案是一样的，都是20", "1", 0.0),
    ("答案是五个", "5", 1.0),
    # ... before a measure word they are a count, whatever the word (三箱, 两盒, 三小时), not the number before them
    ("每箱有8瓶，答案是三箱", "3", 1.0),
    ("每箱有8瓶，答案是三箱", "8", 0.0),
    ("一共有两盒", "2", 1.0),
    ("答案是五瓶", "5", 1.0),
    ("答案是两双", "2", 1.0),
    ("答案是三小时", "3", 1.0),
    # ... but not in a word that 一 and a measure word make (一本正经, 一块儿 "together"), as in 一起
    ("答案是一本正经的胡说", "1", 0.0),
    ("结果是一块儿去的有5人", "5", 1.0),
    ("答案是20", "二十", 1.0),  # a gold in Chinese numerals
    ("一共3万人", "3万", 1.0),
    ("答案：巴黎", "巴黎", 1.0),  # text answers
    ("首都是巴黎。", "巴黎", 1.0),
    ("不是巴黎。", "巴黎", 0.0),
    ("答案是伦敦", "巴黎", 0.0),
    ("The answer is 42, 答案是42", "42", 1.0),
    # a doubled connector and Markdown emphasis, as Qwen models often end a Chinese answer
    ("答案是：42。", "42", 1.0),
    ("答案为:42", "42", 1.0),
    ("**最终答案**：42", "42", 1.0),
    ("**答案是：42**", "42", 1.0),
    ("**答案是：42**", "41", 0.0),
    ("小明一共有：42个苹果。", "42", 1.0),
    ("还剩：75页", "75", 1.0),
    ("答案为：\\frac{3}{4}", "0.75", 1.0),
    # fractions and percentages in words, either side
    ("答案是四分之三", "3/4", 1.0),
    ("答案是四分之三", "1/4", 0.0),
    ("答案是百分之二十五", "25%", 1.0),
    ("答案为 1又1/2", "3/2", 1.0),
    ("答案是3/4", "四分之三", 1.0),
    ("答案是1/4", "四分之三", 0.0),
    # a self-correction after a question or a bare no is the last stated answer, anchor word or not
    ("结果是42吗？不，应为41", "41", 1.0),
    ("结果是42吗？不，应为41", "42", 0.0),
    ("结果是42吗？不，应该是41。", "41", 1.0),
    ("答案是42？不对，应是41", "41", 1.0),
    ("答案是42。错了，应为41", "41", 1.0),
    ("结果是42吗？应为41", "41", 1.0),
    ("结果是42吗？不，正确答案应为41", "41", 1.0),
    ("结果是42吗？不，应为四十一", "41", 1.0),
    ("答案是巴黎吗？不，应为伦敦", "伦敦", 1.0),
    ("答案是巴黎吗？不，应为伦敦", "巴黎", 0.0),
    # 应为 states no answer inside a sentence, after a clause that is neither a no nor a proposed answer, or asked
    ("答案是12，应为3的倍数。", "12", 1.0),
    ("答案是12。为什么？应为3的倍数。", "12", 1.0),
    ("答案是12。检验：x应为3的倍数。", "12", 1.0),
    ("答案是5。为什么x应为3的倍数？", "5", 1.0),
    ("答案是5，x不应为3", "5", 1.0),
    ("结果是42吗？不，应为41吗？", "41", 0.0),
    # a correction replaces only the answer it corrects: an intermediate number, a later number or total outranks
    ("小明有5个苹果吗？不，应为6个。他又买了3个，现在有9个。", "9", 1.0),
    ("小明有5个苹果吗？不，应为6个。他又买了3个，一共有9个。", "9", 1.0),
    ("单价是3元吗？不对，应该是4元。买5个需要20元。", "20", 1.0),
    ("x=2吗？不，应为x=3。所以y=2x+1=7。", "7", 1.0),
    ("速度是60吗？不，应为60千米每小时。距离是120千米。", "120", 1.0),
    ("每天读10页？不，应为12页。12×5=60，所以5天读60页。", "60", 1.0),
    ("每天读10页？不，应为12页。12×5=60，所以5天读60页。", "12", 0.0),
    ("小明有5个苹果吗？不，应为六个", "6", 1.0),  # nothing after it: the correction is the last number
    ("共有5个吗？不，应为6个。每个3元。", "6", 1.0),  # a corrected total outranks a later number, as a total does
    ("答案是5吗？不，应为6。一共有9个。", "6", 1.0),  # a corrected anchor a later total, as 答案是6。一共有9个 would
    ("结果是42吗？不，应为41。不对，应为40", "40", 1.0),  # a correction of a correction
    ("小明有5个吗？不，应为6个。答案是7", "7", 1.0),
    # a correction that states a property, not a value, states nothing
    ("答案是12吗？不，应为3的倍数。", "12", 1.0),
    ("答案是12吗？不，应该是一个偶数。", "12", 1.0),
    ("答案是12吗？不，应该是一个偶数。", "1", 0.0),
    # ASCII marks, and more ways to take an answer back, after a proposed answer only
    ("结果是42吗? 不, 应为41", "41", 1.0),
    ("结果是42吗？不,应为41", "41", 1.0),
    ("结果是42吗？不对不对，应为41", "41", 1.0),
    ("结果是42。等等，应为41", "41", 1.0),
    ("结果是42。更正：应为41", "41", 1.0),
    ("结果是42。我算错了，应为41", "41", 1.0),
    ("结果是42吗？不，总数应为41", "41", 1.0),
    # working between an anchor and its correction leaves it the anchor's correction; a questioned one corrects none
    ("答案是42。验算：6×7=42，42-1=41。不对，应为41。", "41", 1.0),
    ("一共有8个。再算：5+4=9。不对，应为9个。", "9", 1.0),
    ("答案是42吗？不，应为41吗？不，应为40。", "40", 1.0),
    ("答案是7吗?不,应为8吗?不,应为9", "9", 1.0),
    # the numbers of a corrected number's explanation or check state no new answer
    ("有42个吗？不，应为41个，因为要减去1个。", "41", 1.0),
    ("有42个吗？不，应为41个。验证：41+1=42，正确。", "41", 1.0),
    # 它/这 name anything: what follows them is no answer
    ("答案是42吗？不，这应为一道减法题，所以42-1=41。", "1", 0.0),
    ("答案是42吗？不，它应为一个两位数。", "1", 0.0),
    # a text answer is taken as it is, property word or not
    ("答案是偶数。不对，应为奇数。", "奇数", 1.0),
    ("答案是偶数。不对，应为奇数。", "偶数", 0.0),
    ("答案是李白的诗吗？不，应为杜甫的诗。", "杜甫的诗", 1.0),
    ("结果是42。我算错了，应为四十一", "41", 1.0),
    ("等等，应为四十一", "41", 0.0),  # no answer stated before it: it corrects nothing
    ("结果是42。不错，应为43", "42", 1.0),  # 不错 is "right", no no
    ("答案是5。为什么应为正数？", "5", 1.0),
    # LaTeX in \( \) or \[ \] is read whole, an anchor's or a correction's: its \( is no aside in brackets
    ("答案是 \\(42\\) 吗？不，应为 \\(41\\)", "41", 1.0),
    ("答案是 \\(42\\) 吗？不，应为 \\(41\\)", "42", 0.0),
    ("答案是 \\(42\\)", "42", 1.0),
    ("答案是 \\(x=3\\)", "3", 1.0),
    ("答案是 \\[\\frac{1}{2}\\]", "1/2", 1.0),
    ("答案：20张(=2×10张)", "20", 1.0),  # an aside in ASCII brackets is still no result
    # 负 before a number is its minus, in an answer and in a gold; not a lost game's, nor 正负's
    ("答案是负3", "-3", 1.0),
    ("答案是负3", "3", 0.0),
    ("答案是负二分之一", "-1/2", 1.0),
    ("答案是负二分之一", "1/2", 0.0),
    ("答案是负1.5万", "-15000", 1.0),
    ("温度是负3度", "-3", 1.0),
    ("答案是-3", "负3", 1.0),
    ("答案是3", "负3", 0.0),
    ("胜7场，负3场。答案：负3场", "3", 1.0),
    ("这支球队胜5负3", "3", 1.0),
    ("负数有3个", "3", 1.0),
    ("答案是正负3", "-3", 0.0),
    # 正负3 and ±3 are ±3, as math-verify reads \pm 3 ({-3, 3}), in an answer and in a gold; not 3
    ("答案是正负3", "±3", 1.0),
    ("答案是正负3", "3", 0.0),
    ("答案是x=±3", "±3", 1.0),
    ("答案是正负3", "正负3", 1.0),
    ("答案是3", "正负3", 0.0),
    # a correction may name the variable it corrects; one that is asked, or opens no clause, corrects nothing
    ("x=5吗？不，x应为3", "3", 1.0),
    ("x=5吗？不，x应为3，因为2x=6", "3", 1.0),
    ("答案是x=5吗？不，x应为3", "3", 1.0),
    ("答案是x=5吗？不，x应为3", "5", 0.0),
    ("答案是x=5。不对，x的值应为3。", "3", 1.0),
    ("答案是$x=5$吗？不，$x$应为3", "3", 1.0),
    ("AB=5吗？不，AB应为6厘米。", "6", 1.0),
    ("答案是5。不，x应为3吗？", "5", 1.0),
    ("答案是12。因为x应为3，所以y=12", "12", 1.0),
    ("答案是5。另外，y应为3。", "5", 1.0),
    ("x=5吗？不，x应为3。所以y=2x+1=7。", "7", 1.0),
    # an apology, 纠正一下, an interjection's no (哦不, 啊不对) or an ellipsis takes an answer back too, and after a
    # no a bare 是 before a number corrects as 应为 does
    ("答案是42。纠正一下，应为41", "41", 1.0),
    ("答案是42。纠正一下，应为41", "42", 0.0),
    ("答案是42。不好意思，应该是41", "41", 1.0),
    ("答案是42。抱歉，应为41", "41", 1.0),
    ("答案是42。对不起，是41。", "41", 1.0),
    ("答案是42……不对，是41", "41", 1.0),
    ("答案是42……不对，是41", "42", 0.0),
    ("答案是42...不对，是41", "41", 1.0),
    ("答案是42……应该是41", "41", 1.0),
    ("答案是42。哦不，是41。", "41", 1.0),
    ("答案是42。啊不对，是41。", "41", 1.0),
    ("答案是42。嗯不对，是41", "41", 1.0),
    ("答案是42。诶不对，应该是41", "41", 1.0),
    ("答案是42。刚才说的不对，应该是41", "41", 1.0),
    ("答案是42吗？是41", "41", 1.0),
    # a question that checks the answer by asking for a number takes nothing back
    ("答案是12。检查：12除以3是多少？是4，没错。", "12", 1.0),
    ("答案是12。验算：12÷3等于几？是4，正确。", "12", 1.0),
    # ... but a polite phrase that takes nothing back changes no answer, nor a 是 before no number, nor a maths ellipsis
    ("抱歉让你久等了，答案是42", "42", 1.0),
    ("不好意思，答案是42。", "42", 1.0),
    ("答案是42。抱歉让你久等了，是41吗？", "42", 1.0),
    ("答案是42。不好意思，是我没说清楚。", "42", 1.0),
    ("答案是42。等等，是不是算错了？", "42", 1.0),
    ("答案是42。不，是因为6×7=42", "42", 1.0),
    ("答案是42。对，是42。", "42", 1.0),
    ("小明不是5岁，是6岁。", "6", 1.0),
    ("答案是1+2+…+100=5050", "5050", 1.0),
    ("答案是1+2+...+100=5050", "5050", 1.0),
    ("我想想……答案是42", "42", 1.0),
    # an ellipsis right before a number is a pause, no part of it
    ("答案是……42", "42", 1.0),
    ("答案是...42", "42", 1.0),
    ("一共有……8个", "8", 1.0),
    ("结果是42吗？不，应为……41", "41", 1.0),
    # a number that a property names is no answer, after an anchor as after 应为; a bound (至少, 最多, 不少于) states one
    ("答案是3的倍数", "3", 0.0),
    ("答案是大于5的数", "5", 0.0),
    ("答案是一个偶数", "1", 0.0),
    ("答案是60分以上", "60", 0.0),
    ("答案是12。不对，答案是3的倍数。", "12", 1.0),  # as 答案是12吗？不，应为3的倍数 reads 12
    ("有12个吗？不，应为3的倍数。", "3", 0.0),
    ("答案是6，是3的倍数", "6", 1.0),
    ("一共有12个，12是3的倍数", "12", 1.0),
    ("答案：100以内的质数有25个", "25", 1.0),
    ("所以选12，因为12大于10", "12", 1.0),
    ("答案是一个整数，为3", "3", 1.0),
    ("答案：至少需要5辆", "5", 1.0),
    ("答案是不少于5辆", "5", 1.0),  # a bound, as 至少 is
    ("答案是不多于5辆", "5", 1.0),
    ("答案是4辆吗？不，应为至少5辆", "5", 1.0),  # after a correction too
    ("答案是4辆吗？不，应为不超过5辆", "5", 1.0),
    # 不足 is a strict bound, as 少于 is: its number is no answer, after an anchor as after a correction
    ("答案是不足5个", "5", 0.0),
    ("答案是少于5个", "5", 0.0),
    ("不对，应为不足5个", "5", 0.0),
    ("答案是6个。不对，答案是不足5个。", "6", 1.0),  # as 答案是12。不对，答案是3的倍数 reads 12
    ("答案是6个吗？不对，应为不足5个", "6", 1.0),
    ("答案是6个吗？不对，应为不足5个", "5", 0.0),
    ("答案是一个苹果", "1", 1.0),
    # a range names no one number either, as a property does: no answer, not a sum (1-2 is no -1) nor its first number
    ("答案是1-2个", "-1", 0.0),
    ("答案是1-2个", "1", 0.0),
    ("答案是3~5天", "3", 0.0),
    ("答案是3至5天", "3", 0.0),
    # a gold that is a range is one as a whole: the answer must state it (math-verify read such a gold as its first
    # number, so 答案是3天 matched 3~5天)
    ("答案是3~5天", "3~5天", 1.0),
    ("大约需要3~5天。", "3~5天", 1.0),
    ("答案是1-2个", "1-2个", 1.0),
    ("答案是3天", "3~5天", 0.0),
    ("不是3~5天", "3~5天", 0.0),
    ("答案是13~5天", "3~5天", 0.0),
    ("法国的首都是Paris。", "Paris", 1.0),  # a text gold after a Chinese character: no space is needed before it
    ("法国的首都不是Paris。", "Paris", 0.0),
    ("所以需要6辆车，每辆坐1-2人", "6", 1.0),  # the number before it is the last one stated, as before 3的倍数
    ("答案是5-3个", "2", 0.0),  # falling, it is a subtraction not worked out
    ("共有12个，吃了5个，还剩12-5=7个", "7", 1.0),  # before = it is a calculation
    # after a corrected number, a later sentence's number outranks it, and in its own sentence a clause that concludes;
    # a clause that describes it does not
    ("面积是12吗？不对，应为15平方米，长5米宽3米。", "15", 1.0),
    ("面积是12吗？不对，应为15平方米，长5米宽3米。", "3", 0.0),
    ("面积是12吗？不对，应为15平方米，长是5米，宽是3米。", "15", 1.0),
    ("单价是3元吗？不对，应该是4元，买5个需要20元。", "20", 1.0),
    ("x=5吗？不，x应为3，所以y=7", "7", 1.0),
    ("有5个吗？不，应为6个，加上3个是9个。", "9", 1.0),
    ("每天读10页？不，应为12页，12×5=60", "60", 1.0),
    ("有5个吗？不，应为6个，又买了3个，现在有9个。", "9", 1.0),
    # ... but a clause where 是 describes a number with words (其中2个是红色的) does neither: 是 concludes before a number
    ("有5个吗？不，应为6个，其中2个是红色的。", "6", 1.0),
    ("有5个吗？不，应为6个，其中2个是红色的。", "2", 0.0),
    ("有5个吗？不对，应该是6个。剩下的2个是红的。", "6", 1.0),
    ("有5个吗？不对，应该是6个，剩下的2个是红的。", "6", 1.0),
    # 为 between numbers concludes as 是 does (3箱为24个: its result), and describes as 是 does (2个为红的) ...
    ("共有3箱，每箱8个，所以3箱为24个。", "24", 1.0),
    ("共有3箱，每箱8个，所以3箱为24个。", "3", 0.0),
    ("答案：3箱为24个", "24", 1.0),
    ("答案：3箱是24个", "24", 1.0),
    # ... in Chinese numerals too, where an answer reads them (after an anchor, a total or a correction)
    ("答案：三箱为二十四个", "24", 1.0),
    ("答案：三箱是二十四个", "24", 1.0),
    ("答案：三箱为24个", "24", 1.0),
    ("共有3箱，每箱8个，所以三箱为二十四个。", "24", 1.0),
    ("共有3箱，每箱8个，所以三箱为二十四个。", "3", 0.0),
    ("有5个吗？不，应为6个，加上3个为9个。", "9", 1.0),
    ("有5个吗？不，应为6个，6×4为24", "24", 1.0),
    ("有5个吗？不对，应该是6个。剩下的2个为红的。", "6", 1.0),
    ("面积是12吗？不对，应为15平方米，长为5米，宽为3米。", "15", 1.0),  # 为 after no number: as 长是5米
    ("所以面积为24平方米", "24", 1.0),
    ("结果为 6", "6", 1.0),
    # ... but not inside a word: 因为, 作为, 认为, 以为
    ("有5个吗？不，应为6个，把2作为1组。", "6", 1.0),
    ("有5个吗？不，应为6个，别把6认为9。", "6", 1.0),
    ("有5个吗？不，应为6个，漏了1因为3个叠在一起。", "6", 1.0),
    ("有5个吗？不，应为6个，原先把6以为9。", "6", 1.0),
    ("共有3箱，所以把3作为1组。", "3", 1.0),
    # 答： is the answer line of a school solution, an anchor as 答案： is (not 回答 / 解答)
    ("一共有 12 个苹果，吃了 5 个，12 - 5 = 7（个）。\n\n答：还有 7 个苹果。", "7", 1.0),
    ("全班一共有 40 名学生，其中男生占 60%，男生有 40 × 60% = 24 人，女生有 40 - 24 = 16 人。\n\n答：女生有 16 人。", "16", 1.0),
    ("小明总共要读 240 页的书，每天读 30 页，需要 240 ÷ 30 = 8 天。\n\n**答**：需要 8 天读完。", "8", 1.0),
    ("答：这批货物需要 3 辆大卡车运完。\n\n（每辆车载重 5 吨，货物共 15 吨）", "3", 1.0),
    ("答：小明还剩 7 个苹果。（原来有 12 个，吃了 5 个）", "7", 1.0),
    ("答: 需要 8 天。", "8", 1.0),
    ("我来回答：一共有8个，其中3个是红的。", "8", 1.0),
    # a total that restates a given gives way to a later clause that concludes: what is left or there now, 需要,
    # 平均, 就是, 得到, a calculation's result; perhaps after a short subject, but not a rate (每天需要读30页)
    ("一共有 12 个苹果，吃了 5 个，还有 7 个。", "7", 1.0),
    ("一共有 12 个苹果，吃了 5 个，还有 7 个。", "12", 0.0),
    ("他一共有 50 元，买书花了 18 元，买笔花了 12 元，现在还有 20 元。", "20", 1.0),
    ("这本书共有 240 页，小明每天读 30 页，他需要 8 天读完。", "8", 1.0),
    ("一共有 3 箱苹果，每箱 8 个，3 × 8 = 24（个）。", "24", 1.0),
    ("每箱共 8 个，3 箱就是 24 个。", "24", 1.0),
    ("三个班一共有 120 人，平均每班有 40 人。", "40", 1.0),
    ("共有 12 个，加上买的 5 个，得到 17 个。", "17", 1.0),
    ("小明现在有 17 个苹果。\n\n**解析**：3 箱共 12 个，加上原来的 5 个，就是 17 个。", "17", 1.0),
    ("一共需要240页，每天需要读30页。", "240", 1.0),  # a rate is a given, no conclusion
    ("一共有8个，还有3个是红的。", "8", 1.0),  # nor is a number described with words
    ("原来一共有12个，吃了5个，还有7个", "12", 1.0),  # the total is what there was at first, as with 还剩
    # 共 inside a word is no total: 公共, 共享, 共同
    ("公共汽车上原来有 20 人，到站后下车 5 人，又上车 8 人，现在车上有 23 人。", "23", 1.0),
    ("共享单车每小时 2 元，骑了 3 小时，应付 6 元。", "6", 1.0),
    ("甲乙共同工作 2 天后，剩下的工作由乙单独完成，还需要 3 天。", "3", 1.0),
    ("他们共同完成了 2 项工作，又做了 3 项，现在完成了 5 项。", "5", 1.0),
    # a total in an aside in brackets is no total
    ("所以小明现在有 17 个苹果。\n\n（3 箱共 12 个，加上原来的 5 个）", "17", 1.0),
    ("所以小明现在有 17 个苹果。\n\n（3 箱共 12 个，加上原来的 5 个）", "12", 0.0),
    # a check (验证 / 检验 / 验算 / 检查) or an explanation (解析：) after a stated answer states no new answer, up to a
    # sentence that concludes again; before any answer it is working like any other; 答案是否 asks, it is no anchor
    ("所以小明现在有 17 个苹果。\n\n**验证**：17 - 12 = 5，正确。", "17", 1.0),
    ("所以小明现在有 17 个苹果。\n\n**验证**：17 - 12 = 5，正确。", "5", 0.0),
    ("所以小明现在有 17 个苹果。\n\n检验：17 - 12 = 5，符合题意。", "17", 1.0),
    ("所以小明现在有 17 个苹果。\n\n我们来验证一下答案是否正确：17 - 5 = 12，正好是 3 箱的数量。", "17", 1.0),
    ("答案是 17。\n\n验证答案是否正确：17 - 5 = 12，正确。", "17", 1.0),
    ("答案是 17。\n\n检验：结果为 12 + 5，正确。", "17", 1.0),
    ("答案是 17。\n\n**解释**：3 箱共 12 个，再加 5 个。", "17", 1.0),
    ("答案是17。验证：17-5=12，不对。所以答案是18。", "18", 1.0),
    ("检查一下：3 箱共 12 个，加上 5 个，所以有 17 个。", "17", 1.0),
    ("答案约为 17 个，验证：17 × 3 = 51。", "17", 1.0),  # 约为 / 大约是 connect as 是 does
    ("答案大约是 17 个。", "17", 1.0),
    # a number negated is no answer: 不是 / 而不是 / 并非 N
    ("所以小明有 17 个，不是 12 个。", "17", 1.0),
    ("所以小明有 17 个，不是 12 个。", "12", 0.0),
    ("所以小明有 17 个苹果，而不是题目中说的 12 个。", "17", 1.0),
    ("所以小明有 17 个，并非 12 个。", "17", 1.0),
    ("所以小明有 17 个，并非 12 个。", "12", 0.0),
    ("不是 12 个。", "12", 0.0),  # its only number negated, it states none
    # a \\boxed{} holding Chinese is read by the Chinese rules (math-verify reads none of these); one without Chinese as
    # before, by math-verify
    ("最终答案：\\boxed{36元}", "36", 1.0),
    ("最终答案：\\boxed{\\text{36元}}", "36", 1.0),
    ("最终答案：\\boxed{17个苹果}", "17", 1.0),
    ("最终答案：\\boxed{17 个}", "17", 1.0),
    ("最终答案：\\boxed{17 个}", "1", 0.0),
    ("最终答案：\\boxed{十七}", "17", 1.0),
    ("最终答案：\\boxed{1,200 元}", "1200", 1.0),
    ("\\boxed{3.5万}", "35000", 1.0),
    ("\\boxed{负3}", "-3", 1.0),
    ("\\boxed{负3}", "3", 0.0),
    ("\\boxed{二分之一}", "1/2", 1.0),
    ("\\boxed{１７个}", "17", 1.0),
    ("3 箱共 12 个，加上原来的 5 个，所以答案是 \\boxed{17 个}", "17", 1.0),
    ("3 箱共 12 个，加上原来的 5 个，所以答案是 \\boxed{17 个}", "12", 0.0),
    ("先是\\boxed{12个}，再加 5 个，最后是\\boxed{17个}", "17", 1.0),  # the last box, as math-verify takes
    ("所以答案是\\boxed{17\\text{个}}", "17", 1.0),
    ("3 箱共 12 个，所以答案是 \\boxed{17}", "17", 1.0),
    ("3 箱共 12 个，所以答案是 \\boxed{\\frac{1}{2}}", "0.5", 1.0),
    ("3 箱共 12 个，所以答案是 \\boxed{2 \\cdot 5}", "10", 0.0),
    # a bare 结果 may be a step's result in the working: a later conclusion outranks it, as it does a total; 最终结果
    # / 最后的结果 stay anchors
    ("计算结果是 12，再加上原来的 5 个，得到 17 个。所以小明有 17 个苹果。", "17", 1.0),
    ("计算结果是 12，再加上原来的 5 个，得到 17 个。所以小明有 17 个苹果。", "12", 0.0),
    ("第一步：3 × 4 的结果是 12。\n第二步：5 + 12 = 17。\n\n小明现在有 17 个苹果。", "17", 1.0),
    ("3 箱的结果为 12 个，所以小明现在有 17 个苹果。", "17", 1.0),
    ("3 箱的结果为 12 个，答：小明现在有 17 个苹果。", "17", 1.0),
    ("最终结果是 17，所以小明可以分给 3 个朋友。", "17", 1.0),
    ("最后的结果为 17，因此他还需要 3 个。", "17", 1.0),
    # Chinese numerals in a conclusion after the last number are the answer, and they may follow a short verb
    ("所以他需要三天。", "3", 1.0),
    ("书有 180 页，每天读 60 页，所以需要三天读完。", "3", 1.0),
    ("书有 180 页，每天读 60 页，所以需要三天读完。", "60", 0.0),
    ("所以一共要付两千五百元。", "2500", 1.0),
    ("答案是第一名", "1", 0.0),  # an ordinal is no count
    ("所以他们一起去了。", "1", 0.0),
    # ... and before more measure words: 题, 厘米, 节, 把, 间 ...
    ("答案是十五题。", "15", 1.0),
    ("答案是三十厘米。", "30", 1.0),
    ("答案是五节课。", "5", 1.0),
    ("答案是四把椅子。", "4", 1.0),
    ("一共有十二间教室。", "12", 1.0),
    # a list on the lines after an anchor is its answer, read as a text of its own: its total, else its last number
    ("最终答案：\n\n- 第一天：12 个\n- 第二天：8 个\n- 总共：20 个", "20", 1.0),
    ("最终答案：\n\n- 第一天：12 个\n- 第二天：8 个\n- 总共：20 个", "12", 0.0),
    ("最终答案：\n1. 第一天：12 个\n2. 第二天：8 个", "8", 1.0),
    ("答案是 ￥36。", "36", 1.0),  # a full-width yen sign, as ¥
]


@pytest.mark.parametrize("answer, gold, expected", FORMS_ZH, ids=[f"{a!r}~{g!r}" for a, g, _ in FORMS_ZH])
def test_chinese_answer_forms(answer, gold, expected):
    assert accuracy(["让我想一想。</think>" + answer], [gold]) == [expected]


# A gold written in words is read as its number, and its words still match as text (TRL skips such a gold: None)
WORDS = [
    (r"\boxed{42}", "forty two", 1.0),
    (r"\boxed{42}", "Forty-two", 1.0),
    ("The answer is 105.", "one hundred and five", 1.0),
    ("forty two", "forty two", 1.0),
    ("41", "forty two", 0.0),
    (r"\boxed{42}", "Answer is forty two.", 0.0),  # a sentence is a text gold, compared as text
    ("Answer is forty two.", "Answer is forty two.", 1.0),
    ("B", "B", 1.0),  # a letter is no number word
]


@pytest.mark.parametrize("answer, gold, expected", WORDS, ids=[f"{a!r}~{g!r}" for a, g, _ in WORDS])
def test_a_gold_in_words(answer, gold, expected):
    assert accuracy(["</think>" + answer], [gold]) == [expected]


def test_a_long_working_of_checks_and_conclusions_is_read_to_its_answer():
    # each check asked whether an answer came before it by reading all the text before it, checks included: 20 rounds
    # of working, a check and a conclusion took 100 s, each round doubling it; a reward must not stall a run
    working = "".join(f"先算{n}+1={n + 1}。验证：{n}+1={n + 1}，正确。\n所以是{n + 1}。" for n in range(40))
    assert accuracy([working + "答案是5。", working], ["5", "40"]) == [1.0, 1.0]


def test_the_answer_is_read_after_the_thinking_only():
    completions = [
        "6 x 7 is 42, or is it 41?</think>It is 41.",  # the thinking's 42 does not count
        "Maybe 41.</think>It is 42.",
    ]
    assert accuracy(completions, ["42", "42"]) == [0.0, 1.0]


def test_unfinished_thinking_scores_zero_when_the_template_opens_it():
    unfinished = "6 x 7 = 42, so the answer is 42"  # never reached </think>
    assert accuracy([unfinished], ["42"], template_opens_think=True) == [0.0]
    # with the thinking preset (its chat template opens <think>), "auto" knows it
    thinking = plugins.get_reward("accuracy").build(preset=plugins.get_preset("thinking"))
    assert thinking(completions=[unfinished, "ok</think>42"], answer=["42", "42"]) == [0.0, 1.0]
    # a model that does not think: the whole text is the answer
    assert accuracy([unfinished], ["42"], template_opens_think=False) == [1.0]
    # but a completion that opened <think> itself and never closed it has no answer
    assert accuracy(["<think>6 x 7 = 42"], ["42"], template_opens_think=False) == [0.0]


def test_auto_asks_the_run_tokenizers_chat_template(tiny_tokenizer):
    # the tiny preset's template opens <think>, but a --model whose template does not (the arithmetic warm start)
    # answers without thinking: its tokenizer decides, not the preset
    from transformers import AutoTokenizer

    from grpo_skill import modelbuild

    chat = AutoTokenizer.from_pretrained(modelbuild.build("tiny", opens_think=False))
    tiny = plugins.get_preset("tiny")
    for tokenizer, expected in ((chat, [1.0, 1.0]), (tiny_tokenizer, [0.0, 1.0])):
        reward = plugins.get_reward("accuracy").build(tokenizer=tokenizer, preset=tiny)
        assert reward(completions=["57", "I add.</think>57"], answer=["57", "57"]) == expected


def test_reasoning_accuracy_demands_a_closed_thinking_whatever_the_template():
    reward = plugins.get_reward("reasoning_accuracy").build()
    assert reward(completions=["6 x 7 = 42.</think>42", "42", "</think>41"], answer=["42"] * 3) == [1.0, 0.0, 0.0]


def test_an_unreadable_gold_is_reported_once_and_its_samples_left_out():
    reward = plugins.get_reward("accuracy").build()
    completions = ["</think>42", "</think>1", "</think>42", "</think>1"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = reward(completions=completions, answer=[r"\frac{1}{", r"\frac{1}{", "42", "42"])
        second = reward(completions=completions, answer=[r"\frac{1}{", r"\frac{1}{", "42", "42"])
    # the rest of the group still scores: one broken gold does not zero it
    assert first == second == [None, None, 1.0, 0.0]
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and r"'\\frac{1}{'" in messages[0] and "'answer' column" in messages[0]


@pytest.mark.parametrize("gold", ["", None, float("nan")])
def test_an_empty_gold_is_left_out(gold):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert accuracy(["</think>42"], [gold]) == [None]


def test_gold_columns_of_numbers_work_like_text():
    assert accuracy(["</think>42", "</think>0.5"], [42, 0.5]) == [1.0, 1.0]


def test_chat_message_completions():
    completions = [[{"role": "assistant", "content": "ok</think>\\boxed{7}"}]]
    assert accuracy(completions, ["7"]) == [1.0]


def test_another_answer_column_and_a_missing_one():
    reward = plugins.get_reward("accuracy").build(params={"answer_column": "solution"})
    assert reward(completions=["</think>9"], solution=["9"]) == [1.0]
    with pytest.raises(RewardError, match=r"reward 'accuracy' \(plugin builtin:verifiable\).*no 'solution' column"):
        reward(completions=["</think>9"], answer=["9"])


def test_accuracy_in_a_thread_as_trl_runs_async_rewards():
    # math-verify's timeout uses signal.alarm, which raises outside the main thread; the reward turns it off there
    results = []
    thread = threading.Thread(target=lambda: results.append(accuracy([r"</think>\boxed{\frac{1}{2}}"], ["0.5"])))
    thread.start()
    thread.join(60)
    assert results == [[1.0]]


@pytest.mark.parametrize("module, package", [("math_verify", "math-verify"), ("text_to_num", "text2num"),
                                             ("cn2an", "cn2an")])
def test_a_missing_answer_package_is_named_when_the_reward_is_built(monkeypatch, module, package):
    monkeypatch.setitem(__import__("sys").modules, module, None)  # import raises ImportError
    with pytest.raises(RewardError, match=f"this reward needs {package}: pip install {package}"):
        plugins.get_reward("accuracy").build()


# Times of day and durations are compared in hours and minutes (plugins/rewards/clock.py): a gold of 8点05分 is no 8
FORMS_CLOCK = [
    ("答案：8点05分", "8点05分", 1.0),
    ("答案：8点5分", "8点05分", 1.0),
    ("7点40分+25分=8点05分\n答案：8点05分", "8点05分", 1.0),
    ("答：小丽8点05分到校。", "8点05分", 1.0),
    ("答案：8时5分", "8点05分", 1.0),
    ("答案：8:05", "8点05分", 1.0),
    ("答案：８：０５", "8点05分", 1.0),  # full-width digits and colon
    ("答案：上午8点05分", "8点05分", 1.0),  # the gold leaves the half of the day unsaid
    ("答案：八点零五分", "8点05分", 1.0),
    ("答案：8点30分", "8点05分", 0.0),  # the hour alone is not the answer
    ("答案：8点", "8点05分", 0.0),
    ("答案：8", "8点05分", 0.0),
    ("答案：8点05分，不对，是8点10分", "8点05分", 0.0),  # the last time stated
    ("答案：8点半", "8点30分", 1.0),
    ("答案：8点半", "8点半", 1.0),
    ("答案：8点30分", "8点半", 1.0),
    ("答案：8点一刻", "8点15分", 1.0),
    ("答案：8点整", "8点", 1.0),
    ("答案：8点半", "8点", 0.0),
    ("答案：下午3点", "15点", 1.0),
    ("答案：2小时30分", "2小时30分", 1.0),
    ("答案：150分钟", "2小时30分", 1.0),  # a duration is compared in minutes
    ("答案：2个半小时", "2小时30分", 1.0),
    ("答案：2小时", "2小时30分", 0.0),
    ("出发后2小时30分，在10点30分到达。答案：10点30分", "2小时30分", 0.0),  # a time of day is no duration
    ("The answer is 8:05.", "8:05", 1.0),
    ("She arrives at 8:05 am.", "8:05 am", 1.0),
    ("She arrives at 8:05.", "8:05 am", 1.0),
    ("She arrives at 8:05 pm.", "8:05 am", 0.0),
    ("She arrives at 8:30 am.", "8:05 am", 0.0),
    ("She arrives at 8 am.", "8:05 am", 0.0),
    ("The answer is 8.", "8:05", 0.0),
    ("\\boxed{8:05}", "8:05", 1.0),
    ("It takes 2 hours 30 minutes.", "2 hours 30 minutes", 1.0),
    ("It takes 150 minutes.", "2 h 30 min", 1.0),
    ("It takes 2 hours.", "2 hours 30 minutes", 0.0),
    ("答案：45", "45分钟", 1.0),  # one unit: a number with a unit, like 24元
    ("It takes 2.", "2 hours", 1.0),
]


@pytest.mark.parametrize("answer, gold, expected", FORMS_CLOCK, ids=[f"{a!r}~{g!r}" for a, g, _ in FORMS_CLOCK])
def test_times_and_durations_compare_in_hours_and_minutes(answer, gold, expected):
    assert accuracy(["</think>" + answer], [gold]) == [expected]


def test_every_gold_of_the_chinese_word_problems_scores_itself_and_only_itself():
    import csv
    from pathlib import Path

    data = Path(__file__).resolve().parents[1] / "evals/tasks/zh-csv-word-problems/data/word_problems.csv"
    golds = [row["答案"] for row in csv.DictReader(data.open(encoding="utf-8"))]
    assert "8点05分" in golds
    assert accuracy(["</think>答案：" + gold for gold in golds], golds) == [1.0] * len(golds)
    shifted = golds[1:] + golds[:1]  # each answer against the next row's gold
    assert accuracy(["</think>答案：" + gold for gold in shifted], golds) == [0.0] * len(golds)
