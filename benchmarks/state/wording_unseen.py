"""The unseen wording: a third set of templates for the world-state stories, never tuned on.

``wording.FRESH`` was written never to be tuned on, and then became a second tuning set for
the rules. This set was written before any tuning on ``FRESH``, all at once, by someone who
had not read the rules, and it is never to be tuned on: its stories measure the rules on
phrasings nobody shaped them to. A change to the rules made by reading its stories' misses
would make it tuned wording too, and its figure would no longer mean that.

The same kinds, slots and invariants as ``wording.TUNED`` and ``wording.FRESH`` (see
``wording``'s docstring), and no template shared with either: each change template states
its change and no other; a distractor, a refusal or a piece of scenery states none.
"""

from __future__ import annotations

from benchmarks.state.wording import Wording

UNSEEN = Wording(
    opening=(
        "You have lived in {place} all your life, and nothing ever happens here. Until now.",
        "{Place}: you have come here to bury your uncle.",
        "Spring has come to {place}, and so have you.",
        "You are a stranger in {place}, and everyone seems to know it.",
    ),
    move=(
        "Footsore, you limp the last mile into {place}.",
        "You turn off the road and into {place}.",
        "A farmer's cart carries you the rest of the way to {place}.",
        '"Welcome to {place}," someone calls as you come in.',
        "Soon enough you are standing in {place}, looking about you.",
        "{Place} swallows you up, noise and smells and all.",
    ),
    follow=(
        "{person} makes the journey with you.",
        "You do not travel alone: {person} is with you.",
        "{person} insists on coming too, and does.",
        "Behind you, {person} puffs to keep up.",
        '"I\'m not staying here," says {person}, and falls in beside you.',
    ),
    arrive=(
        "{person} shows up, muddy to the knees.",
        "A knock, and then {person} is in the doorway, grinning.",
        "Who should walk through the door but {person}?",
        "{person} catches up with you here.",
        "Unannounced, {person} drops onto the bench beside you.",
    ),
    leave=(
        "With a last wave, {person} disappears down the street.",
        "{person} has somewhere else to be, and goes.",
        '"I\'ve stayed too long already," says {person}, and walks out.',
        "The place feels emptier once {person} has gone.",
        "{person} is off before you can say goodbye.",
    ),
    die=(
        "{person} collapses, clutching at their chest, and never wakes.",
        "A crossbow bolt out of the dark strikes {person}, killing them where they stand.",
        "The poison works fast; by the time help is fetched, {person} is dead.",
        "There is nothing to be done: {person} is dead.",
        "Death comes for {person} quietly, between one breath and the next.",
    ),
    kill=(
        "You bring your axe down on {person}, and {person} does not get up again.",
        "Your knife opens {person}'s throat, and {person} dies choking.",
        "{person} dies on the point of your spear.",
        "You fight, and it is {person} who falls, never to move again.",
    ),
    take=(
        "You sweep {item} into your bag.",
        "{Item} now hangs from your own belt.",
        "Nobody objects when you carry off {item}.",
        "After a moment's thought, you add {item} to your belongings.",
        '"I\'ll have that," you say, and {item} disappears into your pocket.',
        "{Item} is wrapped in a rag and stuffed into your pack.",
    ),
    receive=(
        "{person} holds out {item} to you, and you take it.",
        "{Item} is yours, a gift from {person}.",
        "{person} drops {item} into your open hands.",
        '"For you," says {person}, offering {item}, and you accept it.',
        "{person} makes you a present of {item}.",
    ),
    intro=(
        "You spot {an_item} wedged behind a barrel.",
        "{An_item} rests on the windowsill.",
        "Hanging from a nail above the door is {an_item}.",
        "A basket by the hearth holds {an_item}.",
        "The last traveller must have forgotten {an_item}; it is still on the settle.",
    ),
    drop=(
        "You tip {item} out of your pack onto the floor and leave it there.",
        "{Item} is left behind on the table.",
        "You have no more use for {item}, so you throw it away.",
        "You place {item} on a shelf and step away from it.",
        '"Dead weight," you mutter, and you dump {item} in the corner.',
    ),
    give=(
        "{Item} changes hands, and {person} has it now.",
        "You make a gift of {item} to {person}.",
        "{person} receives {item} from you with both hands.",
        '"Look after this for me," you tell {person}, and you leave {item} in their care.',
        "You bestow {item} on {person}.",
    ),
    other_take=(
        "{person} adds {item} to their own bundle.",
        "{Item} is claimed by {person}.",
        "{person} reaches past you and snaps up {item}.",
        '"Just what I need," says {person}, slipping {item} into a pocket.',
    ),
    snatch=(
        "Before you can react, {person} has whipped {item} out of your belt.",
        "{person} grabs {item} from you and keeps it.",
        '"Give me that," says {person}, prying {item} out of your fingers.',
        "{Item} is no longer yours: {person} has it now.",
    ),
    time=(
        ("By mid-afternoon, {clause}.", 0, 3, False),
        ("Noon comes round, and {clause}.", 0, 2, False),
        ("As the day fades, {clause}.", 0, 4, False),
        ("Darkness settles in, and {clause}.", 0, 5, False),
        ("In the small hours, {clause}.", 0, 6, False),
        ("You sleep badly, and when you wake it is morning; {clause}.", 1, 1, False),
        ("Not long after, {clause}.", 0, None, True),
        ("The hours crawl past; {clause}.", 0, None, True),
        ("Two days go by, and {clause}.", 2, 0, False),
    ),
    clauses=(
        "a barge horn sounds from the river",
        "the wind drops to nothing",
        "sleet spatters against the glass",
        "two crows quarrel on the roof",
        "the well chain creaks in the yard",
        "the smell of baking drifts in",
    ),
    refuse_move=(
        "You start toward {place}, but wolves on the road send you hurrying back.",
        "{Place} is closed to outsiders, and the men at the barrier turn you away.",
        "Fog so thick you cannot see your own hand hides the way to {place}; you go nowhere.",
        "You are too weak from hunger to make it to {place}, and you sink back down.",
        "No path leads to {place} from here, as far as you can find.",
    ),
    refuse_take=(
        "The moment you touch {item}, a dog starts snarling, and you back away empty-handed.",
        "{Item} is frozen into the ice, and you cannot prise it loose.",
        "{Item} sits behind locked glass, out of your reach.",
        '"That is not for sale," the old woman snaps, slapping your hand away from {item}.',
    ),
    distract={
        "place": (
            "Travellers bound for {place} crowd the road outside.",
            "{person} claims to have been born in {place}.",
            "You once swore you would never set foot in {place} again.",
            '"If you ever reach {place}, ask for the ferryman," {person} advises.',
            "Had the weather been kinder, you would have pressed on to {place}.",
        ),
        "item": (
            "You think of your mother's {bare}, lost years ago.",
            "Leave {item} where it is, you tell yourself.",
            '"Whoever takes {item} answers to me," {person} growls.',
            "{person} offers to sell you {item}, but the price is far too high.",
            "If you had a free hand, you would take {item}.",
        ),
        "held": (
            "You nearly leave {item} behind, but remember it at the door.",
            "{person} offers you good money for {item}; you refuse.",
            "Your hand strays to {item}, as it often does.",
            '"Give {item} to me," {person} demands, but you keep hold of it.',
            "{Item} is the one thing you would never part with.",
        ),
        "person": (
            "Nobody here has seen {other}.",
            "{person} swears that {other} will come back for you.",
            "For a moment you mistake a stranger for {other}.",
            '"If {other} were here, this would all be simpler," {person} sighs.',
            '"{other} is dead to me," {person} says bitterly.',
        ),
        "time": (
            "You have lost track of the days.",
            "{person} says the ferry runs only in the evenings.",
            '"Be here by sunset tomorrow," {person} says.',
            "At home, dawn would find you already at work.",
            "{person} asks what day it is, and nobody knows.",
        ),
    },
    scenery=(
        "Water drips steadily from the eaves.",
        "A moth batters itself against the lamp.",
        "Someone is arguing in the next room.",
        "The beams overhead are black with old soot.",
        "A horse whinnies outside.",
        "Mice scratch behind the panelling.",
    ),
    after_take=("Nobody seems to mind.", "Someone has scratched initials into it."),
    after_move=(
        "It smells of damp earth and woodsmoke here.",
        "A dog lifts its head to look at you, then goes back to sleep.",
    ),
    player={
        "move.do": (
            "run to {place}",
            "head into {place}",
            "journey to {place}",
            "trek to {place}",
            "cross over to {place}",
        ),
        "move.story": (
            "I shoulder my pack and start for {place}.",
            "I leave at once for {place}.",
            "Off I go to {place}, humming to myself.",
        ),
        "move.say": (
            "Come on, {place} won't wait for us.",
            "Time I paid {place} a visit.",
            "Onward, to {place}!",
        ),
        "take.do": (
            "seize {item}",
            "nab {bare}",
            "put {item} in my bag",
            "steal {item}",
            "carry off {item}",
        ),
        "take.story": (
            "I wrap {item} in a cloth and put it away.",
            "Quickly, I slip {item} up my sleeve.",
            "{Item} goes into my bag.",
        ),
        "take.say": ("Does {item} belong to anyone?", "I'd like {item}, if nobody minds."),
        "receive.do": ("request {item} from {person}", "persuade {person} to give me {item}"),
        "receive.say": (
            "{person}, I could really use {item}.",
            "{person}, pass me {item}, please.",
        ),
        "drop.do": (
            "throw away {item}",
            "dump {bare}",
            "ditch {item}",
            "chuck {item} away",
        ),
        "drop.story": ("I throw {item} down in disgust.", "I put {item} aside for good."),
        "give.do": (
            "gift {item} to {person}",
            "toss {item} to {person}",
            "lend {item} to {person}",
            "give {person} my {bare}",
            "surrender {item} to {person}",
        ),
        "give.story": (
            "I put {item} into {person}'s hand and close their fingers around it.",
            "{person} needs {item} more than I do, so I hand it over.",
        ),
        "give.say": (
            "{person}, I want you to have {item}.",
            "Take good care of {item} for me, {person}.",
        ),
        "kill.do": ("run {person} through", "lunge at {person}", "go for {person}'s throat"),
        "idle.do": (
            "read the notices on the wall",
            "check my boots",
            "eavesdrop",
            "ask {person} for news",
            "ask {person} whether {place} is safe",
        ),
        "idle.story": ("I rub the cold out of my hands.", "I say nothing and take it all in."),
        "idle.say": (
            "Is it always this cold here?",
            "Whatever happened to {other}?",
            "{person}, is there work to be had in {place}?",
            "Does nobody here smile?",
        ),
    },
)
