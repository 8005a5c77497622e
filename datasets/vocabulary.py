"""Word lists the dataset generators draw from (:mod:`fsstgpu.datasets.generators`).

Changing a list changes what every seed generates: the generators' byte-exact outputs are
pinned by ``tests/test_datasets.py``.
"""

from __future__ import annotations

WORDS = (
    "the of and to in is for on that with as by at from this be are or an it not was have "
    "about home news search products services contact blog help support account login user users "
    "data report reports orders order cart checkout payment invoice price shipping item items "
    "category categories article articles page pages video videos image images profile settings "
    "api docs download downloads release releases project projects team careers events event "
    "market stock weather sports music movies travel hotel hotels food recipe recipes health "
    "science technology business world local politics opinion review reviews comment comments "
    "public private open source code library server client cloud storage network system systems "
    "time year day week month city state country people work school book books game games"
).split()

DOMAINS = (
    "example.com google.com wikipedia.org github.com amazon.com youtube.com facebook.com "
    "twitter.com reddit.com stackoverflow.com microsoft.com apple.com nytimes.com bbc.co.uk "
    "cnn.com linkedin.com medium.com mozilla.org python.org apache.org dbpedia.org "
    "archive.org spiegel.de lemonde.fr elpais.com yahoo.co.jp naver.com baidu.com "
    "booking.com ebay.com etsy.com imdb.com netflix.com spotify.com nvidia.com arxiv.org "
    "nature.com gov.uk europa.eu un.org who.int weather.com espn.com"
).split()

TLDS = ("com", "org", "net", "de", "io", "co.uk", "fr", "info", "nl", "edu")

FIRST_NAMES = (
    "James Mary John Patricia Robert Jennifer Michael Linda William Elizabeth David Barbara "
    "Richard Susan Joseph Jessica Thomas Sarah Charles Karen Daniel Nancy Matthew Lisa Anthony "
    "Betty Mark Sandra Paul Ashley Steven Emily Andrew Donna Kenneth Michelle Joshua Carol Kevin "
    "Amanda Brian Melissa George Deborah Maria Anna Emma Olivia Noah Liam Sophia Mia Lucas "
    "Ahmed Fatima Wei Yuki Hiroshi Priya Raj Olga Ivan Sven Ingrid Pierre Chloé José François "
    "Zoë Björn Søren Łukasz André Inês Jürgen Renée Mónica Ágnes"
).split()

LAST_NAMES = (
    "Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez Lopez "
    "Gonzalez Wilson Anderson Thomas Taylor Moore Jackson Martin Lee Perez Thompson White Harris "
    "Sanchez Clark Ramirez Lewis Robinson Walker Young Allen King Wright Scott Torres Nguyen Hill "
    "Flores Green Adams Nelson Baker Hall Rivera Campbell Mitchell Carter Roberts Kim Chen Wang "
    "Tanaka Sato Patel Singh Ivanov Petrov Schmidt Schneider Fischer Weber Rossi Russo Dubois "
    "Müller García Pérez Öztürk Nguyễn Kowalski Wójcik Jiménez Gómez Lefèvre Ångström "
    "O'Brien O'Connor"
).split()

ASCII_FIRST = [n for n in FIRST_NAMES if n.isascii()]
ASCII_LAST = [n for n in LAST_NAMES if n.isascii() and "'" not in n]

MAIL_PROVIDERS = (
    "gmail.com yahoo.com hotmail.com outlook.com aol.com icloud.com web.de gmx.de mail.ru "
    "yahoo.co.uk orange.fr protonmail.com"
).split()

SERVICES = (
    "api-gateway auth-service order-service payment-service inventory search-indexer "
    "notification-worker user-service billing scheduler"
).split()

RESOURCES = "users orders products invoices sessions carts payments items accounts reports".split()

TABLES = "orders users order_items payments sessions products audit_log events".split()

EXCEPTIONS = (
    "java.lang.NullPointerException java.lang.IllegalStateException "
    "java.util.concurrent.TimeoutException java.io.IOException "
    "org.postgresql.util.PSQLException java.lang.OutOfMemoryError"
).split()

TAGS = "new sale featured popular limited premium eco vintage gift bestseller".split()

CITIES = (
    "London Paris Berlin Madrid Rome Amsterdam Vienna Prague Warsaw Lisbon Dublin Stockholm "
    "Oslo Helsinki Athens Tokyo Seoul Beijing Shanghai Mumbai Delhi Sydney Toronto Chicago "
    "Boston Seattle Austin Denver Zürich München Kraków Malmö São_Paulo Bogotá"
).replace("_", " ").split()

LATIN_ACCENTED = (
    "café crème brûlée garçon à la française déjà vu être très où forêt Straße größer über "
    "schön Mädchen Grüße Fußball año niño señor corazón mañana canción información "
    "pingüino ação coração não informação São Paulo łódź zażółć gęślą jaźń "
    "Việt Nam tiếng phở"
).split()

CYRILLIC = (
    "привет мир данные сжатие строка столбец быстро память город время человек работа "
    "дом вода слово жизнь день рука глаз раз большой новый первый последний хороший "
    "українська мова Київ"
).split()

GREEK = (
    "καλημέρα κόσμος δεδομένα συμπίεση γρήγορα μνήμη πόλη χρόνος άνθρωπος δουλειά σπίτι "
    "νερό λέξη ζωή μέρα χέρι μεγάλος νέος πρώτος τελευταίος καλός Αθήνα θάλασσα ήλιος"
).split()

CJK = (
    "数据 压缩 字符串 内存 北京 上海 中国 我们 你好 世界 时间 城市 工作 今天 明天 "
    "图形 处理器 快速 列存储 データ 圧縮 文字列 東京 大阪 日本 ありがとう こんにちは "
    "です ます カタカナ 한국어 서울 데이터"
).split()

ARABIC = (
    "مرحبا عالم بيانات ضغط سلسلة ذاكرة سريع مدينة وقت إنسان عمل بيت ماء كلمة حياة يوم "
    "كبير جديد أول آخر جيد القاهرة دبي الرياض"
).split()

EMOJI = (
    "😀 😂 😍 👍 🙏 🎉 🔥 ❤️ ✅ 🚀 🌍 📦 💾 ⚡ 🐍 🤖 👩‍💻 🇯🇵 🇫🇷 ☕"
).split()
