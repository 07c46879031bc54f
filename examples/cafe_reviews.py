#!/usr/bin/env python3
"""cafe_reviews.py -- writes the example data of docs/own-data.md: short labelled cafe reviews
("label<TAB>sentence", 1 positive, 0 negative), words of their own (not the course-review task's).

    python3 examples/cafe_reviews.py            # writes examples/cafe-train.tsv, cafe-test.tsv

A review is an optional opener, a subject, "was"/"tasted"/"seemed", an optional negation
("not", "never"), an optional intensifier, an adjective and an optional closing phrase:
    "honestly the espresso was not very bitter this morning"   -> 1
The label is the adjective's polarity, flipped by a negation. The test file uses another seed,
and a tenth of its sentences swap in adjectives the training file never has (they read as
[UNK] with a vocabulary made from the training file). Deterministic: the same files on every
run (Python's random.Random with a fixed seed).
"""
import os
import random

OPENERS = ["", "", "", "honestly", "overall", "sadly", "luckily", "today"]
SUBJECTS = ["the coffee", "the espresso", "the latte", "the croissant", "the barista",
            "the service", "the music", "the terrace", "the cake", "the tea", "the bagel",
            "the waiter"]
VERBS = ["was", "was", "tasted", "seemed"]
NEGATIONS = ["not", "never"]
INTENSIFIERS = ["", "", "very", "truly", "quite", "rather", "so"]
POSITIVE = ["delicious", "fresh", "friendly", "cosy", "warm", "smooth", "tasty", "lovely",
            "charming", "perfect"]
NEGATIVE = ["bitter", "stale", "rude", "noisy", "cold", "burnt", "slow", "dirty", "bland",
            "soggy"]
UNSEEN = {1: ["heavenly", "superb"], 0: ["greasy", "dreadful"]}  # test file only
CLOSERS = ["", "", "", "this morning", "on sunday", "at the corner shop", "near the station",
           "after the rain", "as usual"]


def review(rng, unseen):
    positive = rng.random() < 0.5
    negated = rng.random() < 0.35
    adjective = rng.choice(POSITIVE if positive else NEGATIVE)
    if unseen:
        adjective = rng.choice(UNSEEN[int(positive)])
    verb = "was" if negated else rng.choice(VERBS)
    words = [rng.choice(OPENERS), rng.choice(SUBJECTS), verb,
             rng.choice(NEGATIONS) if negated else "", rng.choice(INTENSIFIERS), adjective,
             rng.choice(CLOSERS)]
    label = int(positive != negated)
    return label, " ".join(w for w in words if w)


def write(path, n, seed, unseen_share):
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(n):
            label, sentence = review(rng, rng.random() < unseen_share)
            f.write(f"{label}\t{sentence}\n")


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    write(os.path.join(here, "cafe-train.tsv"), 400, 1, 0.0)
    write(os.path.join(here, "cafe-test.tsv"), 100, 2, 0.1)
