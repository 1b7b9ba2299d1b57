package tokenizer

// The inventories Synthetic builds its vocabulary from, most frequent first. Each is a
// white-space separated list; synthetic_test.go checks what each may hold (ASCII letters,
// except syntheticExtraChars). They are constants, so they cost nothing until Synthetic runs.

// syntheticStarters are capitalized words that often start a sentence or are names; they come
// before the lower-case words so that even the 4096-token vocabulary has them.
const syntheticStarters = `
The I It In This He We You They She What And But If There That So How When My Hello
A As At For On Is Are Do Can Thank Yes No Please Why Who Where Which One All Our Your His Her
Its Not Now Then After Before With From By To Of Or An Be Have Has Was Were Will Would Could
Should May Let Here These Those Some Many Most Each Every Also Just Well Oh Hi Dear Mr Mrs Dr
New First Last Today Once Since While Although However Therefore Because
English American America United States China Europe London Paris York Google Microsoft
January February March April June July August September October November December
Monday Tuesday Wednesday Thursday Friday Saturday Sunday God John David Michael James
`

// syntheticSubwords are pieces from inside words (no "▁"): frequent English letter pairs,
// then syllables, suffixes and stems.
const syntheticSubwords = `
er in on an re at en ed es or ti is ar te al it ou le st nd ng nt se ha as io ve co me de hi
ri ro ic ne ea ra ce li ch ll be ma si om ur ca el ta la ns di fo ho pe ec pr no ct us ac ot
il tr ly nc et ut ss so rs un lo wa ge ie wh ee wi em ad ol rt po we na ul ni ts mo ow pa im
mi ai sh ir su id os iv ia am fi ci vi pl ig tu ev ld ry mp fe bl ab gh ty op wo sa ay ex ke
fr oo av ag if ap gr od bo sp rd do uc bu ei ov by rm ep tt oc fa ef cu rn sc gi da yo cr cl
du ga qu ue ff ba ey ls va um pp ua up lu go ht ru ug ds lt pi rc rr eg au ck ew mu br bi pt
ing ion tion the and ent ati for her ter hat tha ere ate his con res ver all ons nce men ith
ted ers pro thi wit are ess not ive was ect rea com eve per int est sta cti ica ist ear ain
one our iti rat ell ant ong ome ide ort ure age ous ine ard ill ake ack ound ight ould ough
ation ment ness able ible ful less ity ize ise ism ance ence ship ward wise sion ition ally
ical ically ings ers ies ied ily ier iest ened ening ized izing ated ating ator ators ative
ities ments ations ive ives ified ify ology ological ist ists ism isms ian ians ish ent ents
ure ures ary ory ial ual ular ance ances ency ant ants ly ies ness ful ous ious eous al als
ward ed er est ing es s y ic ics ical ed ant ery ory uous ine age ages ite ites ite ure
struct port form pose ject tract duct spect mit vert press cept ceive sist tain vent
scribe script graph phone photo tele micro auto inter trans super under over out up
`

// syntheticWords are frequent English words, most frequent first (lower case).
const syntheticWords = `
the of and to a in is it you that he was for on are with as i his they be at one have this
from or had by not word but what some we can out other were all there when up use your how
said an each she which do their time if will way about many then them write would like so
these her long make thing see him two has look more day could go come did number sound no most
people my over know water than call first who may down side been now find any new work part
take get place made live where after back little only round man year came show every good me
give our under name very through just form sentence great think say help low line differ turn
cause much mean before move right boy old too same tell does set three want air well also play
small end put home read hand port large spell add even land here must big high such follow
act why ask men change went light kind off need house picture try us again animal point mother
world near build self earth father head stand own page should country found answer school grow
study still learn plant cover food sun four between state keep eye never last let thought city
tree cross farm hard start might story saw far sea draw left late run while press close night
real life few north open seem together next white children begin got walk example ease paper
group always music those both mark often letter until mile river car feet care second book
carry took science eat room friend began idea fish mountain stop once base hear horse cut sure
watch color face wood main enough plain girl usual young ready above ever red list though feel
talk bird soon body dog family direct pose leave song measure door product black short numeral
class wind question happen complete ship area half rock order fire south problem piece told
knew pass since top whole king space heard best hour better true during hundred five remember
step early hold west ground interest reach fast verb sing listen six table travel less morning
ten simple several vowel toward war lay against pattern slow center love person money serve
appear road map rain rule govern pull cold notice voice unit power town fine certain fly fall
lead cry dark machine note wait plan figure star box noun field rest correct able pound done
beauty drive stood contain front teach week final gave green oh quick develop ocean warm free
minute strong special mind behind clear tail produce fact street inch multiply nothing course
stay wheel full force blue object decide surface deep moon island foot system busy test record
boat common gold possible plane stead dry wonder laugh thousand ago ran check game shape equate
hot miss brought heat snow tire bring yes distant fill east paint language among grand ball yet
wave drop heart am present heavy dance engine position arm wide sail material size vary settle
speak weight general ice matter circle pair include divide syllable felt perhaps pick sudden
count square reason length represent art subject region energy hunt probable bed brother egg
ride cell believe fraction forest sit race window store summer train sleep prove lone leg
exercise wall catch mount wish sky board joy winter sat written wild instrument kept glass
grass cow job edge sign visit past soft fun bright gas weather month million bear finish happy
hope flower clothe strange gone jump baby eight village meet root buy raise solve metal whether
push seven paragraph third shall held hair describe cook floor either result burn hill safe cat
century consider type law bit coast copy phrase silent tall sand soil roll temperature finger
industry value fight lie beat excite natural view sense ear else quite broke case middle kill
son lake moment scale loud spring observe child straight consonant nation dictionary milk speed
method organ pay age section dress cloud surprise quiet stone tiny climb cool design poor lot
experiment bottom key iron single stick flat twenty skin smile crease hole trade melody trip
office receive row mouth exact symbol die least trouble shout except wrote seed tone join
suggest clean break lady yard rise bad blow oil blood touch grew cent mix team wire cost lost
brown wear garden equal sent choose fell fit flow fair bank collect save control decimal gentle
woman captain practice separate difficult doctor please protect noon whose locate ring
character insect caught period indicate radio spoke atom human history effect electric expect
crop modern element hit student corner party supply bone rail imagine provide agree thus
capital chair danger fruit rich thick soldier process operate guess necessary sharp wing create
neighbor wash bat rather crowd corn compare poem string bell depend meat rub tube famous dollar
stream fear sight thin triangle planet hurry chief colony clock mine tie enter major fresh
search send yellow gun allow print dead spot desert suit current lift rose continue block chart
hat sell success company subtract event particular deal swim term opposite wife shoe shoulder
spread arrange camp invent cotton born determine quart nine truck noise level chance gather
shop stretch throw shine property column molecule select wrong gray repeat require broad
prepare salt nose plural anger claim continent oxygen sugar death pretty skill women season
solution magnet silver thank branch match suffix especially fig afraid huge sister steel
discuss forward similar guide experience score apple bought led pitch coat mass card band rope
slip win dream evening condition feed tool total basic smell valley nor double seat arrive
master track parent shore division sheet substance favor connect post spend chord fat glad
original share station dad bread charge proper bar offer segment slave duck instant market
degree populate chick dear enemy reply drink occur support speech nature range steam motion
path liquid log meant quotient teeth shell neck
hello hi okay thanks sorry welcome goodbye
being having doing getting making going looking using used uses years days times things ways
words others including however because within without around across although whatever
something anything everything nothing someone anyone everyone nobody somewhere anywhere
is are was were been has had does did done said says gets makes goes went comes came knows
thinks thought wanted needed worked lived seemed started turned called asked looked tried
became become becomes took taken given gives found finds told tells shows showed shown kept
left felt brought began begun seen known heard meant paid sent built stood understood
following following based according provided required related available different important
government business information data public service services university research development
system systems program programs software computer computers internet online website web email
model models network networks user users server client code file files function functions
value values input output error errors result results example examples version update
new old high low large small long short early late young major local national international
social political economic financial medical legal military human natural personal private
health education community policy market economy industry technology science history
president minister party election law court police security war peace state states country
countries city cities area areas region world global million billion percent per cent
money price prices cost costs pay tax rate rates growth share shares stock stocks bank
company companies business businesses customer customers product products report reports
student students teacher teachers school schools class classes course courses training
child children family families parents mother father son daughter wife husband friend friends
life lives death body health care hospital patient patients doctor doctors disease treatment
food water air energy power oil gas fuel environment climate weather temperature
question questions answer answers problem problems issue issues case cases reason reasons
point points fact facts idea ideas way ways part parts group groups member members level
process support management control design quality performance security access experience
language languages text texts token tokens string strings number numbers list lists type types
class object objects method methods variable variables return returns true false null none
self def int var const func import export print package module struct interface main test
http https www com org html json xml api url id src lib bin usr get set put post delete
please thank thanks really actually probably maybe perhaps quite rather almost already
always usually sometimes often never ever still yet again also too very much more most less
least only just even especially particularly generally simply clearly certainly finally
today tomorrow yesterday week weeks month months year years hour hours minute minutes second
seconds morning afternoon evening night day days time times moment period future past present
man men woman women people person child boy girl baby guy lady king queen prince
love like want need feel think know believe hope wish mean understand remember forget
good great best better bad worse worst nice beautiful happy sad sure free full easy hard
simple clear real true right wrong possible important different similar special certain
open close start stop begin end finish continue keep let help try use make take give get
first second third last next previous final main whole total single double half
before after during since until while because although unless whether though if so
about above across after against along among around behind below beneath beside between
beyond down inside into near off onto outside over past through toward towards under upon
within without
`

// Syllable inventories for the vocabularies past the word lists: every onset + nucleus + coda
// is a piece, with and without "▁", in order of the sum of the three indices (so the common
// combinations come first); then the capitalized "▁" forms; then two open syllables.
const (
	syntheticOnsets = `- t s r n l d c m p b f h g w v k th st ch pr tr sh j y gr br cr cl fr
pl bl sp wh dr fl sc gl sl sw z qu sm sn sk tw str ph wr kn x spr scr thr shr`
	syntheticNuclei = `a e i o u ea ou ai ee oo y ie oa au ay ow oi ey ue ei`
	syntheticCodas  = `- n r t s l d st nd ng nt m ll ck p ss ch sh th k rt rd rn rm rk ct ft
pt nk mp ld lt x ve ke te ne re se le de me ce ge be pe ze`
)

// syntheticExtraChars are single non-ASCII characters frequent in English text (typographic
// punctuation, accented letters, symbols). Everything else non-ASCII is byte fallback.
const syntheticExtraChars = `’ “ ” — – … é à è á í ó ú ü ö ä ñ ç ß ° € £ • · « » ©`
