"""Generated text of every kind an agent's messages carry, for measuring token estimates.

``corpus(kind, seed, half)`` returns a list of messages (strings) of one kind, the same
for the same arguments on every machine (``random.Random(seed)``, no network, no data
files). Prose is built from the word lists below; ``half`` picks which half of each list
(the even or the odd entries) is drawn from, so an estimate tuned on ``half=0`` can be
checked on words it never saw (``half=1``). Machine text (hashes, base64, identifiers,
JSON values) is random, so a new seed is new text.

Used by ``bench/token_accuracy.py`` and ``tests/test_token_accuracy.py``.
"""

# The templates of generated code and log lines read better whole, one to a line, and the
# word lists as the text they are.
# ruff: noqa: E501, SIM905

from __future__ import annotations

import base64
import hashlib
import json
import random
import uuid
from collections.abc import Callable
from typing import Any

ENGLISH = """
the of and to in is that for it as was with be by on not he this are or his from at which
but have an they you were her she there been one all we their has would when if so no will
more about can said up out them some could what into than then only other time new these two
may first any like now my such make over our even most after also made many before must
through back years where much your way well down should because each just those people how
too little state good very world still own see men work long here get both between life
being under never day same another know while last might great old year off come since
against go came right used take three himself few house use during without again place around
however home small found thought went say part once general high upon school every does got
united left number course war until always away something fact though water less public put
think almost hand enough far took head yet government system better set told nothing night
end why called didn't eyes find going look asked later knew point next program city business
give group toward young days let room president side social given present several order
national possible rather second face per among form important often things looked early white
case john become large big need four within felt along children saw best church ever least
power development light thing seemed family interest want members mind country area others
done turned although open god service problem certain kind different thus began door help
means sense whole matter perhaps itself york times law human line above name example action
company hands local show whether five history gave today either act feet across taken past
quite anything seen having death experience body word half really field week car words
already themselves information tell college shall together money period held keep sure free
seems real behind cannot miss political air question making office brought whose special
major heard problems federal became study ago moment available known result street economic
boy position reason change south board individual job society areas west close turn love
community true court force full seem wife future age voice center woman control common
necessary following front sometimes six girl clear further land run students provide
configuration implementation responsibility authentication deployment infrastructure
performance database requirements documentation environment microservice asynchronous
throughput latency repository dependency serialization
"""

FRENCH = """
le la les de des du un une et est en que qui dans pour pas sur au avec il elle nous vous ils
ce cette son sa ses leur mais ou plus par comme tout fait été être avoir très bien aussi
même encore déjà après avant où quand donc alors là ici toujours jamais rien personne
chose temps jour année monde vie homme femme enfant pays ville maison travail école
français première dernière général élève était déjà à côté près loin peut-être
aujourd'hui c'est n'est qu'il l'on d'un beaucoup peu trop assez moins grand petit
nouveau nouvelle vieux jeune beau belle bon mauvais haut bas long court fort faible
système réseau données serveur utilisateur sécurité problème réponse question demande
résultat méthode créer modifier supprimer vérifier réussi échoué mémoire fenêtre
développement téléchargement paramètres événement numéro février décembre août
"""

GERMAN = """
der die das und ist nicht ein eine zu den mit sich des auf für im dem von sie es auch als an
wird werden hat haben nach bei aus wie oder einem einer einen so um noch nur über wenn war
kann können muss müssen soll wir ihr ihm ihn mein dein unser schon immer wieder hier dort
jetzt heute morgen gestern Jahr Zeit Tag Mann Frau Kind Haus Stadt Land Welt Leben Arbeit
Straße Größe Grüße Mädchen Brücke schön groß klein gut schlecht früh spät über für
Datenbank Benutzer Anwendung Schnittstelle Fehlermeldung Einstellungen Verbindung
Sicherheitsüberprüfung Softwareentwicklung Kundenzufriedenheit Lieferkette Rechnungsnummer
Anfrage Antwort Ergebnis Bestellung Versand Zahlung ändern löschen prüfen erfolgreich
möglich natürlich wahrscheinlich gemäß außerdem während zwischen gegenüber Bedingungen
"""

RUSSIAN = """
и в не на я что он с как а по это она к но они мы из у за вы так же от для о бы уже
когда только его ее если или было быть мне был была были есть все всё еще даже нет да
время человек год день жизнь дело рука работа слово место лицо друг глаз вопрос дом сторона
страна мир случай голова ребенок сила конец вид система часть город отношение женщина деньги
земля машина вода отец проблема час право нога решение дверь образ история власть закон
новый большой хороший последний русский молодой главный высокий сделать сказать говорить
знать стать видеть хотеть можно нужно очень сегодня завтра всегда теперь потом здесь там
пользователь сообщение сервер данные ошибка запрос ответ файл настройка программа проверка
"""

ARABIC = """
في من على إلى أن هذا هذه التي الذي عن مع كان كانت هو هي لا ما لم قد كل بعد قبل بين
عند حتى أو ثم إذا لكن أيضا جدا اليوم غدا أمس الآن هنا هناك كيف لماذا متى أين نعم
رجل امرأة طفل بيت مدينة دولة عالم حياة عمل وقت يوم سنة شهر كتاب مدرسة جامعة طالب معلم
كبير صغير جديد قديم جميل سريع بطيء مهم ممكن ضروري واضح صعب سهل الحكومة الشركة
المستخدم الرسالة الخادم البيانات الخطأ الطلب الإجابة الملف الإعدادات البرنامج التحقق
مرحبا شكرا السلام عليكم كيف حالك أريد يمكن يجب نستطيع قال يقول ذهب يذهب جاء يأتي
"""

SPANISH = """
el la los las de del un una y que en es por para con no se su sus lo como más pero muy
también ya cuando donde porque sobre entre hasta desde todo todos otra otro este esta ese
año día vez tiempo mundo vida hombre mujer niño país ciudad casa trabajo escuela gobierno
está están había hacer tener poder decir sabía después antes siempre nunca aquí allí ahora
información configuración aplicación conexión contraseña usuario servidor búsqueda página
número teléfono dirección también además través según mañana último próximo rápido
solicitud respuesta resultado pedido factura envío pago cliente empresa desarrollo proyecto
necesitamos podríamos revisar enviar actualizar eliminar guardar comprobar reunión equipo
mientras entonces sin embargo todavía frecuencia luego quizás realmente juntos nadie
algo nada cada propio necesitar trabajar hablar pensar sentir ver encontrar entender pedir
responder esperar buscar escribir leer comer beber dormir salir volver coche calle tren avión
carta libro ventana puerta mesa silla cocina habitación baño semana mes tarde noche familia
amigo importante necesario posible difícil fácil grande pequeño nuevo viejo bonito seguridad
rendimiento memoria dispositivo actualización carga mensaje base datos contraseña sesión
"""

PORTUGUESE = """
o a os as de do da dos das um uma e que em é por para com não se seu sua mais mas muito
também já quando onde porque sobre entre até desde todo todos outra outro este esta esse
ano dia vez tempo mundo vida homem mulher criança país cidade casa trabalho escola governo
está estão havia fazer ter poder dizer sabia depois antes sempre nunca aqui ali agora
informação configuração aplicação conexão senha usuário servidor pesquisa página número
telefone endereço além através segundo amanhã último próximo rápido solicitação resposta
resultado pedido fatura envio pagamento cliente empresa desenvolvimento projeto
precisamos poderíamos verificar enviar atualizar excluir salvar reunião equipe obrigado
enquanto então porém ainda frequentemente logo talvez realmente juntos ninguém
algo nada cada próprio precisar trabalhar falar pensar sentir ver encontrar entender pedir
responder esperar procurar escrever ler comer beber dormir sair voltar carro rua trem avião
carta livro janela porta mesa cadeira cozinha quarto banheiro semana mês manhã tarde noite
família amigo importante necessário possível difícil fácil grande pequeno novo velho bonito
segurança desempenho memória dispositivo atualização carregamento mensagem banco dados
"""

ITALIAN = """
il lo la i gli le di del della un una e che in è per con non si suo sua più ma molto anche
già quando dove perché sopra tra fino da tutto tutti altra altro questo questa quello anno
giorno volta tempo mondo vita uomo donna bambino paese città casa lavoro scuola governo
sono hanno aveva fare avere potere dire sapeva dopo prima sempre mai qui ora adesso
informazioni configurazione applicazione connessione utente servizio ricerca pagina numero
telefono indirizzo inoltre attraverso secondo domani ultimo prossimo veloce richiesta
risposta risultato ordine fattura spedizione pagamento cliente azienda sviluppo progetto
dobbiamo potremmo controllare inviare aggiornare eliminare salvare riunione squadra grazie
mentre quindi però invece ancora spesso subito forse davvero insieme nessuno qualcosa
niente ognuno sempre proprio bisogno lavorare parlare pensare sentire vedere trovare capire
chiedere rispondere aspettare cercare scrivere leggere mangiare bere dormire uscire tornare
macchina strada treno aereo lettera libro finestra porta tavolo sedia cucina camera bagno
settimana mese stagione mattina pomeriggio sera notte oggi ieri domani famiglia amico
importante necessario possibile difficile facile grande piccolo nuovo vecchio bello brutto
sicurezza prestazioni memoria dispositivo impostazioni aggiornamento caricamento errore
"""

POLISH = """
i w na z do że się nie jest to jak ale po o co tak już od za przez dla jego jej ich tym
który która które być może bardzo także jeszcze tylko kiedy gdzie dlaczego teraz zawsze
rok dzień czas świat życie człowiek kobieta dziecko kraj miasto dom praca szkoła rząd
wczoraj dzisiaj jutro wieczorem rozmawiałem kierownikiem działu sprzedaży wynikach
ostatni kwartał przychody wzrosły koszty również znacząco zwiększyły musimy przygotować
szczegółową analizę przedstawić zarządowi przyszłym tygodniu sprawdzić wszystkie faktury
zostały zaksięgowane dziękuję pozdrawiam serdecznie użytkownik wiadomość serwer błąd
zapytanie odpowiedź plik ustawienia program połączenie aktualizacja usunięcie zapisanie
wyszukiwanie zamówienie płatność klient przedsiębiorstwo rozwój oprogramowania spotkanie
chciałbym mogę muszę trzeba można bardzo trochę wszyscy nikt coś nic zawsze często
czasami może oczywiście proszę przepraszam tak nie samochód pociąg samolot list książka
okno drzwi stół krzesło kuchnia pokój łazienka tydzień miesiąc rano popołudnie noc rodzina
przyjaciel ważny potrzebny możliwy trudny łatwy duży mały nowy stary piękny bezpieczeństwo
wydajność pamięć urządzenie ustawienia aktualizacja ładowanie komunikat baza danych hasło
logowanie wylogowanie rozwiązanie problem pytanie odpowiedzi sprawozdanie współpraca
jestem jesteś są był była było będzie mam masz mają miał chcę wiem myślę widzę mówię
robię idę wracam czekam szukam piszę czytam jem piję śpię pracuję mieszkam lubię kocham
pan pani państwo woda chleb mleko kawa herbata pieniądze sklep ulica droga rzeka góra morze
las pole ogród drzewo kwiat pies kot ptak koń słońce deszcz śnieg wiatr zima wiosna lato
jesień poniedziałek wtorek środa czwartek piątek sobota niedziela godzina minuta chwila
koniec początek część strona sprawa przykład powód sposób miejsce wynik liczba cena wartość
dobrze źle szybko wolno wcześnie późno razem osobno prawie naprawdę właśnie jednak ponieważ
"""

CZECH = """
a v na s do že se ne je to jak ale po o co tak už od za přes pro jeho její jejich tím
který která které být může velmi také ještě jen když kde proč teď vždy rok den čas svět
život člověk žena dítě země město dům práce škola vláda včera dnes zítra večer mluvil
vedoucím obchodního oddělení výsledcích poslední čtvrtletí tržby vzrostly náklady také
výrazně zvýšily musíme připravit podrobnou analýzu předložit vedení příští týden
zkontrolovat všechny faktury zaúčtovány děkuji srdečně zdravím uživatel zpráva server
chyba požadavek odpověď soubor nastavení program připojení aktualizace odstranění uložení
vyhledávání objednávka platba zákazník společnost vývoj software schůzka rozhodnutí
jsem jsi jsou byl byla bylo bude mám máš mají měl chci vím myslím vidím říkám dělám
jdu vracím čekám hledám píšu čtu jím piju spím pracuji bydlím rád miluji pane paní voda chléb
mléko káva čaj peníze obchod ulice cesta řeka hora moře les pole zahrada strom květina pes
kočka pták kůň slunce déšť sníh vítr zima jaro léto podzim pondělí úterý středa čtvrtek pátek
sobota neděle hodina minuta chvíle konec začátek část strana věc příklad důvod způsob místo
výsledek číslo cena hodnota dobře špatně rychle pomalu brzy pozdě spolu zvlášť skoro opravdu
právě však protože bezpečnost výkon paměť zařízení nastavení stahování heslo přihlášení
"""

TURKISH = """
ve bir bu da de için ile çok daha ne gibi ama en her kadar sonra önce şimdi burada orada
olarak olan oldu değil var yok ben sen biz siz onlar yıl gün zaman dünya hayat adam kadın
çocuk ülke şehir ev iş okul hükümet dün bugün yarın akşam satış departmanı müdürüyle son
çeyrek sonuçlarımız hakkında konuştum gelirlerin yüzde arttığı ortaya çıktı ancak lojistik
maliyetleri önemli ölçüde yükseldi ayrıntılı analiz hazırlamamız gelecek hafta yönetime
sunmamız gerekiyor faturaların kaydedilip kaydedilmediğini kontrol edebilir misin
teşekkürler saygılarımla kullanıcı mesaj sunucu hata istek yanıt dosya ayarlar program
bağlantı güncelleme silme kaydetme arama sipariş ödeme müşteri şirket geliştirme toplantı
"""

HUNGARIAN = """
a az és hogy nem is egy de meg már csak mint ha van volt lesz még el ki be fel le itt ott
most mindig soha év nap idő világ élet ember asszony gyerek ország város ház munka iskola
kormány tegnap ma holnap este beszéltem értékesítési osztály vezetőjével utolsó
negyedéves eredményeinkről kiderült bevételek tizenkét százalékkal nőttek logisztikai
költségek jelentősen emelkedtek részletes elemzést készítenünk jövő héten bemutatnunk
vezetőségnek megnézni minden számlát lekönyveltek köszönöm üdvözlettel felhasználó
üzenet kiszolgáló hiba kérés válasz fájl beállítások program kapcsolat frissítés törlés
mentés keresés megrendelés fizetés ügyfél vállalat fejlesztés szoftver értekezlet
szeretnék tudok akarok kell lehet nagyon kicsit mindenki senki valami semmi
mindig gyakran néha talán persze természetesen köszönöm szívesen kérem bocsánat igen nem
autó vonat repülő levél könyv ablak ajtó asztal szék konyha szoba fürdőszoba hét hónap
reggel délután éjszaka család barát fontos szükséges lehetséges nehéz könnyű nagy kicsi új
régi szép biztonság teljesítmény memória eszköz beállítás frissítés betöltés hibaüzenet
adatbázis felhasználói jelszó bejelentkezés kijelentkezés megoldás probléma kérdés válasz
vagyok vagy vagyunk volt lesz akar tud szeret lát hall mond csinál megy jön vár
keres ír olvas eszik iszik alszik dolgozik lakik úr asszonyom víz kenyér tej kávé tea pénz
bolt utca út folyó hegy tenger erdő mező kert fa virág kutya macska madár ló nap eső hó szél
tél tavasz nyár ősz hétfő kedd szerda csütörtök péntek szombat vasárnap óra perc pillanat
vége kezdet rész oldal ügy példa ok mód hely eredmény szám ár érték jól rosszul gyorsan lassan
korán későn együtt külön majdnem tényleg éppen azonban mert
"""

ROMANIAN = """
și în de la cu pe nu că o un este sunt a fost mai dar foarte sau dacă când unde pentru
acum aici acolo mereu niciodată an zi timp lume viață om femeie copil țară oraș casă muncă
școală guvern ieri astăzi mâine aseară am vorbit șeful departamentului vânzări despre
rezultatele noastre ultimul trimestru dovedit veniturile crescut doisprezece sută
costurile logistice semnificativ trebuie pregătim analiză detaliată prezentăm conducerii
săptămâna viitoare putea verifica toate facturile înregistrate mulțumesc bune utilizator
mesaj server eroare cerere răspuns fișier setări program conexiune actualizare ștergere
salvare căutare comandă plată client companie dezvoltare întâlnire echipă
"""

INDONESIAN = """
dan yang di ke dari ini itu dengan untuk tidak ada adalah akan pada juga saya kami kita
mereka anda sudah belum bisa harus karena jika ketika sangat lebih semua tahun hari waktu
dunia hidup orang perempuan anak negara kota rumah pekerjaan sekolah pemerintah kemarin
malam berbicara kepala departemen penjualan tentang hasil kuartal terakhir ternyata
pendapatan naik persen tetapi biaya logistik meningkat secara signifikan perlu
menyiapkan analisis terperinci mempresentasikannya kepada manajemen minggu depan bisakah
memeriksa apakah faktur dibukukan terima kasih salam hangat pengguna pesan peladen
kesalahan permintaan jawaban berkas pengaturan program sambungan pembaruan penghapusan
penyimpanan pencarian pesanan pembayaran pelanggan perusahaan pengembangan pertemuan
"""

VIETNAMESE = """
và của là có không được cho những với một các này trong người đã để khi đến như từ cũng
nhưng rất nhiều hơn đó thì sẽ đang vì nếu năm ngày thời gian thế giới cuộc sống đàn ông
phụ nữ trẻ em đất nước thành phố nhà công việc trường học chính phủ hôm qua hôm nay ngày
mai tối tôi nói chuyện trưởng phòng kinh doanh về kết quả quý vừa rồi doanh thu tăng mười
hai phần trăm chi phí hậu cần đáng kể chúng ta cần chuẩn bị phân tích chi tiết trình bày
ban giám đốc tuần sau kiểm tra tất cả hóa đơn cảm ơn người dùng tin nhắn máy chủ lỗi yêu
cầu phản hồi tệp cài đặt chương trình kết nối cập nhật xóa lưu tìm kiếm đơn hàng thanh toán
trong khi vì vậy tuy nhiên vẫn thường xuyên sau đó có lẽ thực sự cùng nhau không ai
cái gì mỗi riêng cần làm việc nói nghĩ cảm thấy nhìn tìm hiểu hỏi trả lời chờ đợi viết đọc
ăn uống ngủ đi ra trở về xe hơi đường phố tàu máy bay thư sách cửa sổ bàn ghế nhà bếp phòng
tháng buổi sáng buổi chiều đêm gia đình bạn bè quan trọng cần thiết có thể khó dễ lớn nhỏ mới
cũ đẹp bảo mật hiệu suất bộ nhớ thiết bị tải xuống thông báo cơ sở dữ liệu mật khẩu đăng nhập
"""

HEBREW = """
של את על עם זה לא כי גם אבל או אם כל יש אין הוא היא הם אנחנו אני אתה מה איך למה מתי איפה
היום מחר אתמול עכשיו כאן שם תמיד אף פעם שנה יום זמן עולם חיים איש אישה ילד ארץ עיר בית
עבודה בית ספר ממשלה גדול קטן חדש ישן יפה מהיר חשוב אפשר צריך ברור קשה קל שלום תודה
בבקשה משתמש הודעה שרת שגיאה בקשה תשובה קובץ הגדרות תוכנה בדיקה חיבור עדכון מחיקה שמירה
חיפוש הזמנה תשלום לקוח חברה פיתוח פגישה דוח רבעון הכנסות הוצאות ניתוח הנהלה שבוע הבא
"""

# Chinese is drawn character by character, Japanese and Korean by word.
CHINESE = (
    "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学"
    "对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头"
    "面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向"
    "情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信"
    "北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难"
    "神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物"
    "台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指"
    "思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步"
    "完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持取设始版双"
)

JAPANESE = """
私 あなた 彼 彼女 今日 明日 昨日 時間 会社 仕事 学校 先生 学生 電話 電車 天気 日本 東京 世界 人生
食べる 飲む 行く 来る 見る 聞く 話す 書く 読む 使う 作る 思う 分かる できる ある いる する なる
は が を に で と も の へ から まで より ね よ か です ます でした ました ません でしょう
とても 少し もう まだ すぐ いつも 本当に たぶん ちょっと 一緒に 大丈夫 ありがとう すみません
コンピューター サーバー データベース ユーザー メッセージ ファイル エラー システム ネットワーク
プログラム アプリ テスト ログイン パスワード 設定 確認 送信 受信 接続 更新 削除 保存 検索 結果
問題 質問 答え 意味 理由 方法 場合 情報 管理 開発 環境 必要 可能 簡単 重要 新しい 古い 大きい
"""

KOREAN = """
안녕하세요 감사합니다 죄송합니다 네 아니요 저는 당신은 우리는 그는 그녀는 오늘 내일 어제 지금
시간 회사 일 학교 선생님 학생 전화 날씨 한국 서울 세계 사람 친구 가족 음식 물 집 책 문제 질문
먹다 마시다 가다 오다 보다 듣다 말하다 쓰다 읽다 만들다 생각하다 알다 있다 없다 하다 되다
먹었어요 갔습니다 봤어요 했습니다 할게요 좋아요 싫어요 괜찮아요 맞아요 몰라요 알겠습니다
정말 아주 조금 벌써 아직 항상 같이 빨리 천천히 다시 모두 함께 그래서 그런데 하지만 그리고
사용자 메시지 서버 데이터 오류 요청 응답 파일 설정 프로그램 확인 연결 업데이트 삭제 저장 검색
결과를 문제가 질문을 방법으로 경우에 정보를 관리하는 개발자 환경에서 필요한 가능한 중요한
"""

EMOJI = (
    "😀 😂 🤣 😊 😍 🤔 😅 😭 😎 🙏 👍 👎 👏 🙌 👋 💪 🎉 🎊 🔥 ✨ ⭐ 🌟 💯 ✅ ❌ ⚠️ 🚀 💡 📌 📎 "
    "📝 📊 📈 📉 🗂️ 🔒 🔑 🐛 🛠️ ⚙️ 💻 🖥️ 📱 ☕ 🍕 🍺 🎂 🌍 🌧️ ☀️ ❤️ 💔 💙 💚 🧡 👀 🤷 🤦‍♂️ "
    "👩‍💻 👨‍👩‍👧 🏳️‍🌈 👍🏽 👋🏻 🇫🇷 🇯🇵 🇺🇸 🇩🇪"
).split()


def _words(block: str, half: int) -> list[str]:
    words = block.split()
    return words[half::2]


def _sentences(
    rng: random.Random,
    words: list[str],
    *,
    join: str = " ",
    stop: str = ".",
    comma: str = ",",
    capitalize: bool = True,
    typographic: bool = False,
    lengths: tuple[int, int] = (5, 18),
) -> str:
    sentence = [rng.choice(words) for _ in range(rng.randint(*lengths))]
    if typographic and rng.random() < 0.3:
        # Typeset prose: curly quotes, apostrophes and dashes.
        position = rng.randrange(len(sentence))
        sentence[position] = rng.choice(["“{}”", "{}’s", "{} —", "{}…", "‘{}’"]).format(
            sentence[position]
        )
    for _ in range(rng.randint(0, 2)):
        position = rng.randrange(1, len(sentence))
        sentence[position - 1] += comma
    if rng.random() < 0.15:
        sentence.insert(rng.randrange(len(sentence)), str(rng.choice([3, 12, 42, 2024, 150, 7])))
    text = join.join(sentence)
    if capitalize:
        text = text[:1].upper() + text[1:]
    return text + rng.choice(
        [stop, stop, stop, "?" if stop == "." else "？", "!" if stop == "." else "！"]
    )


def _paragraphs(rng: random.Random, make_sentence: Callable[[], str], join: str = " ") -> str:
    return "\n\n".join(
        join.join(make_sentence() for _ in range(rng.randint(2, 6)))
        for _ in range(rng.randint(1, 3))
    )


def _prose(words_block: str, **options: Any) -> Callable[[random.Random, int], str]:
    def make(rng: random.Random, half: int) -> str:
        words = _words(words_block, half)
        return _paragraphs(rng, lambda: _sentences(rng, words, **options))

    return make


def _chinese(rng: random.Random, half: int) -> str:
    characters = list(CHINESE[half::2])
    return _paragraphs(
        rng,
        lambda: _sentences(
            rng, characters, join="", stop="。", comma="，", capitalize=False, lengths=(6, 24)
        ),
        join="",
    )


def _japanese(rng: random.Random, half: int) -> str:
    words = _words(JAPANESE, half)
    return _paragraphs(
        rng,
        lambda: _sentences(rng, words, join="", stop="。", comma="、", capitalize=False),
        join="",
    )


def _identifier(rng: random.Random, style: str | None = None) -> str:
    parts = [rng.choice(_IDENTIFIER_WORDS) for _ in range(rng.randint(1, 4))]
    style = style or rng.choice(["snake", "camel", "pascal", "constant", "kebab", "dotted"])
    if style == "snake":
        return "_".join(parts)
    if style == "camel":
        return parts[0] + "".join(p.capitalize() for p in parts[1:])
    if style == "pascal":
        return "".join(p.capitalize() for p in parts)
    if style == "constant":
        return "_".join(parts).upper()
    if style == "kebab":
        return "-".join(parts)
    return ".".join(parts)


_IDENTIFIER_WORDS = """
user id name get set list item value count total max min index key data config request
response handler client server session token cache error message event queue task job
worker retry timeout status result order account payment invoice customer product price
file path dir url host port db table row column query filter sort page limit offset
create update delete fetch load save parse format validate build run start stop init
is has can enabled visible active pending async sync batch stream buffer chunk size
""".split()


def _python(rng: random.Random, half: int) -> str:
    out = []
    for _ in range(rng.randint(1, 3)):
        name = _identifier(rng, "snake")
        args = [_identifier(rng, "snake") for _ in range(rng.randint(1, 3))]
        typed = ", ".join(
            f"{a}: {rng.choice(['int', 'str', 'float', 'list[str]', 'dict[str, Any]'])}"
            for a in args
        )
        body = [f'    """{_sentences(rng, _words(ENGLISH, half), lengths=(4, 10))}"""']
        for _ in range(rng.randint(2, 6)):
            target = _identifier(rng, "snake")
            choice = rng.random()
            if choice < 0.3:
                body.append(
                    f"    {target} = {rng.choice(args)}.{_identifier(rng, 'snake')}({rng.randint(0, 100)})"
                )
            elif choice < 0.5:
                body.append(
                    f'    if {rng.choice(args)} is None:\n        raise ValueError(f"{target} must be set, got {{{rng.choice(args)}!r}}")'
                )
            elif choice < 0.7:
                body.append(
                    f"    for {target} in {rng.choice(args)}:\n        {_identifier(rng, 'snake')}.append({target})"
                )
            elif choice < 0.85:
                body.append(f"    # {_sentences(rng, _words(ENGLISH, half), lengths=(4, 12))}")
            else:
                body.append(
                    f'    {target} = {{"{_identifier(rng, "snake")}": {rng.randint(0, 9999)}, "{_identifier(rng, "snake")}": \'{rng.choice(_IDENTIFIER_WORDS)}\'}}'
                )
        body.append(f"    return {rng.choice(args)}")
        out.append(
            f"def {name}({typed}) -> {rng.choice(['int', 'str', 'None', 'bool'])}:\n"
            + "\n".join(body)
        )
    return "\n\n\n".join(out) + "\n"


def _javascript(rng: random.Random, half: int) -> str:
    out = []
    for _ in range(rng.randint(1, 3)):
        name = _identifier(rng, "camel")
        args = [_identifier(rng, "camel") for _ in range(rng.randint(1, 3))]
        body = []
        for _ in range(rng.randint(2, 6)):
            target = _identifier(rng, "camel")
            choice = rng.random()
            if choice < 0.3:
                body.append(
                    f"  const {target} = await {rng.choice(args)}.{_identifier(rng, 'camel')}({rng.randint(0, 100)});"
                )
            elif choice < 0.5:
                body.append(
                    f"  if (!{rng.choice(args)}) {{\n    throw new Error(`{target} is required: ${{{rng.choice(args)}}}`);\n  }}"
                )
            elif choice < 0.7:
                body.append(
                    f"  {rng.choice(args)}.forEach(({target}) => {{\n    {_identifier(rng, 'camel')}.push({target});\n  }});"
                )
            elif choice < 0.85:
                body.append(f"  // {_sentences(rng, _words(ENGLISH, half), lengths=(4, 12))}")
            else:
                body.append(
                    f"  let {target} = {{ {_identifier(rng, 'camel')}: {rng.randint(0, 9999)}, {_identifier(rng, 'camel')}: '{rng.choice(_IDENTIFIER_WORDS)}' }};"
                )
        body.append(f"  return {rng.choice(args)};")
        out.append(
            f"export async function {name}({', '.join(args)}) {{\n" + "\n".join(body) + "\n}"
        )
    return "\n\n".join(out) + "\n"


def _timestamp(rng: random.Random) -> str:
    return (
        f"20{rng.randint(19, 26)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}."
        f"{rng.randint(0, 999):03d}Z"
    )


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _json_value(rng: random.Random, half: int, depth: int) -> Any:
    choice = rng.random()
    if depth < 2 and choice < 0.25:
        return {
            _identifier(rng, "snake"): _json_value(rng, half, depth + 1)
            for _ in range(rng.randint(1, 5))
        }
    if depth < 2 and choice < 0.35:
        return [_json_value(rng, half, depth + 1) for _ in range(rng.randint(1, 4))]
    if choice < 0.5:
        return rng.randint(0, 10 ** rng.randint(1, 7))
    if choice < 0.55:
        return round(rng.uniform(-1000, 1000), rng.randint(1, 4))
    if choice < 0.6:
        return rng.choice([True, False, None])
    if choice < 0.68:
        return _uuid(rng)
    if choice < 0.74:
        return _timestamp(rng)
    if choice < 0.8:
        return f"https://api.example.com/v1/{_identifier(rng, 'kebab')}/{rng.randint(1, 99999)}"
    if choice < 0.9:
        return " ".join(rng.choice(_words(ENGLISH, half)) for _ in range(rng.randint(1, 8)))
    return _identifier(rng)


def _tool_output(rng: random.Random, half: int) -> dict[str, Any]:
    return {_identifier(rng, "snake"): _json_value(rng, half, 0) for _ in range(rng.randint(3, 10))}


def _json_pretty(rng: random.Random, half: int) -> str:
    return json.dumps(_tool_output(rng, half), indent=2, ensure_ascii=False)


def _json_compact(rng: random.Random, half: int) -> str:
    return json.dumps(_tool_output(rng, half), separators=(",", ":"), ensure_ascii=False)


def _uuids(rng: random.Random, half: int) -> str:
    join = rng.choice(["\n", ", ", " "])
    return join.join(_uuid(rng) for _ in range(rng.randint(3, 30)))


def _hex_digests(rng: random.Random, half: int) -> str:
    lines = []
    for _ in range(rng.randint(2, 20)):
        digest = hashlib.sha256(rng.randbytes(16)).hexdigest()
        if rng.random() < 0.3:
            digest = digest[:40]  # a git commit id
        lines.append(
            rng.choice(
                [digest, f"sha256:{digest}", f"{digest}  {_identifier(rng, 'snake')}.tar.gz"]
            )
        )
    return "\n".join(lines)


def _identifiers(rng: random.Random, half: int) -> str:
    join = rng.choice([", ", "\n", " "])
    return join.join(_identifier(rng) for _ in range(rng.randint(5, 60)))


def _base64(rng: random.Random, half: int) -> str:
    encoded = base64.b64encode(rng.randbytes(rng.randint(30, 1500))).decode()
    if rng.random() < 0.5:
        encoded = "\n".join(encoded[i : i + 76] for i in range(0, len(encoded), 76))
    return encoded


def _logs(rng: random.Random, half: int) -> str:
    lines = []
    for _ in range(rng.randint(3, 25)):
        level = rng.choice(["INFO", "DEBUG", "WARN", "ERROR", "info", "error"])
        ip = ".".join(str(rng.randint(1, 254)) for _ in range(4))
        path = "/" + "/".join(
            _identifier(rng, rng.choice(["snake", "kebab"])) for _ in range(rng.randint(1, 4))
        )
        choice = rng.random()
        if choice < 0.4:
            detail = f'{ip} - - "{rng.choice(["GET", "POST", "PUT"])} {path}?id={rng.randint(1, 99999)} HTTP/1.1" {rng.choice([200, 201, 404, 500])} {rng.randint(10, 99999)} {rng.randint(1, 2000)}ms'
        elif choice < 0.7:
            detail = f"[{_identifier(rng, 'kebab')}-{rng.randint(1, 16)}] {_identifier(rng, 'dotted')}: {' '.join(rng.choice(_words(ENGLISH, half)) for _ in range(rng.randint(3, 9)))} (request_id={_uuid(rng)})"
        else:
            detail = f"Traceback in {path}.py line {rng.randint(1, 900)}: {_identifier(rng, 'pascal')}Error: {_identifier(rng, 'snake')}={rng.randint(0, 10**6)} host={ip}:{rng.randint(1024, 65535)}"
        stamp = _timestamp(rng) if rng.random() < 0.6 else _timestamp(rng).replace("T", " ")[:19]
        lines.append(f"{stamp} {level} {detail}")
    return "\n".join(lines)


def _markdown_table(rng: random.Random, half: int) -> str:
    columns = rng.randint(3, 6)
    header = [_identifier(rng, "snake").replace("_", " ").title() for _ in range(columns)]
    kinds = [rng.choice(["word", "int", "float", "id", "status"]) for _ in range(columns)]

    def cell(kind: str) -> str:
        if kind == "int":
            return str(rng.randint(0, 10**5))
        if kind == "float":
            return f"{rng.uniform(0, 100):.2f}"
        if kind == "id":
            return _uuid(rng)[:8]
        if kind == "status":
            return rng.choice(["ok", "failed", "pending", "✅", "❌", "n/a"])
        return " ".join(rng.choice(_words(ENGLISH, half)) for _ in range(rng.randint(1, 3)))

    rows = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * columns) + "|"]
    for _ in range(rng.randint(2, 15)):
        rows.append("| " + " | ".join(cell(k) for k in kinds) + " |")
    return "\n".join(rows)


def _emoji(rng: random.Random, half: int) -> str:
    words = _words(ENGLISH, half)
    parts = []
    for _ in range(rng.randint(5, 40)):
        if rng.random() < 0.55:
            parts.append("".join(rng.choice(EMOJI) for _ in range(rng.randint(1, 3))))
        else:
            parts.append(rng.choice(words))
    return " ".join(parts)


def _upper_case(rng: random.Random, half: int) -> str:
    return _prose(ENGLISH)(rng, half).upper()


def _scalar(rng: random.Random, half: int) -> str:
    choice = rng.random()
    if choice < 0.25:
        return str(rng.randint(0, 10 ** rng.randint(1, 6)))
    if choice < 0.35:
        return rng.choice(["true", "false", "null", '"yes"', "~"])
    if choice < 0.5:
        return f'"{" ".join(rng.choice(_words(ENGLISH, half)) for _ in range(rng.randint(1, 6)))}"'
    if choice < 0.6:
        return f"{_identifier(rng, 'kebab')}:{rng.randint(0, 9)}.{rng.randint(0, 40)}.{rng.randint(0, 9)}"
    if choice < 0.7:
        return f"{rng.randint(1, 4096)}{rng.choice(['Mi', 'Gi', 'm', 's', 'ms', '%'])}"
    if choice < 0.8:
        return f"https://{_identifier(rng, 'kebab')}.example.org/{_identifier(rng, 'snake')}"
    return _identifier(rng, rng.choice(["snake", "kebab", "dotted", "camel"]))


def _yaml(rng: random.Random, half: int) -> str:
    lines: list[str] = []

    def mapping(indent: int, depth: int) -> None:
        for _ in range(rng.randint(2, 6)):
            key = _identifier(rng, rng.choice(["snake", "camel", "kebab"]))
            pad = " " * indent
            choice = rng.random()
            if depth < 3 and choice < 0.3:
                lines.append(f"{pad}{key}:")
                mapping(indent + 2, depth + 1)
            elif depth < 3 and choice < 0.45:
                lines.append(f"{pad}{key}:")
                for _ in range(rng.randint(1, 4)):
                    lines.append(f"{pad}  - {_scalar(rng, half)}")
            elif choice < 0.5:
                lines.append(f"{pad}# {_sentences(rng, _words(ENGLISH, half), lengths=(3, 8))}")
            else:
                lines.append(f"{pad}{key}: {_scalar(rng, half)}")

    mapping(0, 0)
    return "\n".join(lines) + "\n"


def _csv(rng: random.Random, half: int) -> str:
    columns = rng.randint(3, 8)
    kinds = [
        rng.choice(["int", "float", "word", "date", "email", "id", "bool"]) for _ in range(columns)
    ]
    separator = rng.choice([",", ",", ";", "\t"])

    def cell(kind: str) -> str:
        if kind == "int":
            return str(rng.randint(0, 10 ** rng.randint(1, 8)))
        if kind == "float":
            return f"{rng.uniform(-1000, 10000):.{rng.randint(1, 4)}f}"
        if kind == "date":
            return _timestamp(rng)[: rng.choice([10, 19, 24])]
        if kind == "email":
            return f"{rng.choice(_IDENTIFIER_WORDS)}.{rng.choice(_IDENTIFIER_WORDS)}{rng.randint(1, 99)}@example.com"
        if kind == "id":
            return _uuid(rng)[: rng.choice([8, 36])]
        if kind == "bool":
            return rng.choice(["true", "false", "1", "0", ""])
        text = " ".join(rng.choice(_words(ENGLISH, half)) for _ in range(rng.randint(1, 4)))
        return f'"{text}"' if rng.random() < 0.3 else text

    rows = [separator.join(_identifier(rng, "snake") for _ in range(columns))]
    for _ in range(rng.randint(3, 40)):
        rows.append(separator.join(cell(kind) for kind in kinds))
    return "\n".join(rows) + "\n"


def _sql(rng: random.Random, half: int) -> str:
    statements = []
    for _ in range(rng.randint(1, 4)):
        table = _identifier(rng, "snake")
        columns = [_identifier(rng, "snake") for _ in range(rng.randint(2, 6))]
        choice = rng.random()
        if choice < 0.4:
            statements.append(
                f"SELECT {', '.join(f't.{c}' for c in columns)}, COUNT(*) AS {_identifier(rng, 'snake')}\n"
                f"FROM {table} t\nJOIN {_identifier(rng, 'snake')} u ON u.id = t.{columns[0]}\n"
                f"WHERE t.{columns[-1]} >= '{_timestamp(rng)[:10]}' AND t.{rng.choice(columns)} IN "
                f"({', '.join(repr(rng.choice(_IDENTIFIER_WORDS)) for _ in range(rng.randint(1, 4)))})\n"
                f"GROUP BY {', '.join(f't.{c}' for c in columns)}\nORDER BY 1 DESC\nLIMIT {rng.randint(1, 1000)};"
            )
        elif choice < 0.7:
            values = ", ".join(
                f"({', '.join(str(rng.randint(0, 10**6)) if rng.random() < 0.5 else repr(rng.choice(_words(ENGLISH, half))) for _ in columns)})"
                for _ in range(rng.randint(1, 6))
            )
            statements.append(f"INSERT INTO {table} ({', '.join(columns)}) VALUES {values};")
        else:
            definitions = ",\n".join(
                f"    {c} {rng.choice(['BIGINT NOT NULL', 'TEXT', 'VARCHAR(255)', 'TIMESTAMPTZ DEFAULT now()', 'NUMERIC(12, 2)', 'BOOLEAN'])}"
                for c in columns
            )
            statements.append(
                f"CREATE TABLE IF NOT EXISTS {table} (\n    id BIGSERIAL PRIMARY KEY,\n{definitions}\n);"
            )
    return "\n\n".join(statements) + "\n"


def _html(rng: random.Random, half: int) -> str:
    words = _words(ENGLISH, half)

    def element(depth: int) -> str:
        tag = rng.choice(["div", "section", "ul", "p", "span", "a", "table", "form"])
        attributes = ""
        for _ in range(rng.randint(0, 3)):
            name = rng.choice(["class", "id", "data-id", "href", "style", "aria-label"])
            value = rng.choice(
                [
                    _identifier(rng, "kebab"),
                    str(rng.randint(1, 9999)),
                    "/" + _identifier(rng, "kebab") + f"/{rng.randint(1, 999)}",
                ]
            )
            attributes += f' {name}="{value}"'
        pad = "  " * depth
        if depth >= 3 or rng.random() < 0.4:
            text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 10)))
            return f"{pad}<{tag}{attributes}>{text}</{tag}>"
        children = "\n".join(element(depth + 1) for _ in range(rng.randint(1, 4)))
        return f"{pad}<{tag}{attributes}>\n{children}\n{pad}</{tag}>"

    return "\n".join(element(0) for _ in range(rng.randint(1, 3))) + "\n"


def _stack_trace(rng: random.Random, half: int) -> str:
    if rng.random() < 0.5:
        frames = []
        for _ in range(rng.randint(3, 15)):
            module = "/".join(_identifier(rng, "snake") for _ in range(rng.randint(1, 4)))
            frames.append(
                f'  File "/srv/app/{module}.py", line {rng.randint(1, 3000)}, in {_identifier(rng, "snake")}\n'
                f"    {_identifier(rng, 'snake')} = {_identifier(rng, 'snake')}({_identifier(rng, 'snake')}, {_identifier(rng, 'snake')}={rng.randint(0, 100)})"
            )
        error = f"{_identifier(rng, 'pascal')}Error: {_sentences(rng, _words(ENGLISH, half), lengths=(3, 10))}"
        return "Traceback (most recent call last):\n" + "\n".join(frames) + "\n" + error + "\n"
    package = ".".join(_identifier(rng, "snake").replace("_", "") for _ in range(rng.randint(2, 4)))
    lines = [
        f'Exception in thread "main" java.lang.{_identifier(rng, "pascal")}Exception: {_sentences(rng, _words(ENGLISH, half), lengths=(3, 8))}'
    ]
    for _ in range(rng.randint(4, 20)):
        cls = _identifier(rng, "pascal")
        lines.append(
            f"\tat com.{package}.{cls}.{_identifier(rng, 'camel')}({cls}.java:{rng.randint(1, 900)})"
        )
    if rng.random() < 0.4:
        lines.append(f"\t... {rng.randint(1, 40)} more")
    return "\n".join(lines) + "\n"


def _whitespace(rng: random.Random, half: int) -> str:
    words = _words(ENGLISH, half)
    parts = []
    for _ in range(rng.randint(3, 20)):
        choice = rng.random()
        if choice < 0.25:
            parts.append(" " * rng.randint(2, 400))
        elif choice < 0.4:
            parts.append("\t" * rng.randint(1, 60))
        elif choice < 0.55:
            parts.append("\n" * rng.randint(2, 40))
        elif choice < 0.7:
            width = rng.randint(8, 40)
            parts.append(
                "\n".join(
                    f"{rng.choice(words):<{width}}{rng.randint(0, 10**5):>{rng.randint(6, 20)}}"
                    for _ in range(rng.randint(2, 10))
                )
            )
        elif choice < 0.75:
            parts.append(rng.choice(["\r\n", " \n", "\t\n", "\n \n"]) * rng.randint(1, 20))
        elif choice < 0.8:
            parts.append("".join(rng.choice(" \t\n\r") for _ in range(rng.randint(2, 80))))
        else:
            parts.append(" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))))
    return "".join(parts)


def _number(rng: random.Random) -> str:
    choice = rng.random()
    if choice < 0.15:
        return str(rng.randint(-9, 99))
    if choice < 0.4:
        return str(rng.randint(0, 10 ** rng.randint(1, 12)))
    if choice < 0.55:
        return str(-rng.randint(0, 10 ** rng.randint(1, 6)))
    if choice < 0.85:
        return f"{rng.uniform(-1000, 1000):.{rng.randint(1, 8)}f}"
    if choice < 0.95:
        return f"{rng.uniform(0, 1):.{rng.randint(4, 10)}f}"
    return f"{rng.uniform(1, 9):.3f}e{rng.choice(['-', '+', ''])}{rng.randint(1, 30):02d}"


def _numbers(rng: random.Random, half: int) -> str:
    join = rng.choice([" ", ", ", "\n", ",", "\t", "; "])
    return join.join(_number(rng) for _ in range(rng.randint(5, 300)))


def _digits(rng: random.Random, half: int) -> str:
    parts = []
    for _ in range(rng.randint(1, 8)):
        length = rng.choice([rng.randint(4, 40), rng.randint(40, 400), rng.randint(400, 3000)])
        digits = "".join(rng.choice("0123456789") for _ in range(length))
        if rng.random() < 0.2:
            digits = rng.choice("0123456789") * length  # a run of one digit
        parts.append(digits)
    return rng.choice(["\n", " ", ", "]).join(parts)


def _json_numbers(rng: random.Random, half: int) -> str:
    choice = rng.random()
    if choice < 0.35:
        width = rng.randint(1, 12)
        value: Any = [rng.randint(0, 10**width) for _ in range(rng.randint(5, 300))]
    elif choice < 0.55:
        value = [round(rng.gauss(0, 0.2), rng.randint(3, 8)) for _ in range(rng.randint(8, 256))]
    elif choice < 0.8:
        value = {
            _identifier(rng, "snake"): [rng.randint(0, 10**9) for _ in range(rng.randint(1, 60))]
            for _ in range(rng.randint(1, 5))
        }
    else:
        value = [
            {
                "id": rng.randint(1, 10**9),
                "ts": rng.randint(1_500_000_000, 1_800_000_000),
                _identifier(rng, "snake"): round(rng.uniform(0, 1e4), 2),
            }
            for _ in range(rng.randint(2, 40))
        ]
    if rng.random() < 0.3:
        return json.dumps(value, indent=2)
    return json.dumps(value, separators=rng.choice([(",", ":"), (", ", ": ")]))


#: Every kind of content, by name, with its generator ``(rng, half) -> message``.
KINDS: dict[str, Callable[[random.Random, int], str]] = {
    "english": _prose(ENGLISH, typographic=True),
    "french": _prose(FRENCH, typographic=True),
    "german": _prose(GERMAN, typographic=True),
    "russian": _prose(RUSSIAN),
    "arabic": _prose(ARABIC, stop=".", comma="،", capitalize=False),
    "chinese": _chinese,
    "japanese": _japanese,
    "korean": _prose(KOREAN, capitalize=False),
    "python": _python,
    "javascript": _javascript,
    "json_pretty": _json_pretty,
    "json_compact": _json_compact,
    "uuids": _uuids,
    "hex_digests": _hex_digests,
    "identifiers": _identifiers,
    "base64": _base64,
    "logs": _logs,
    "markdown_table": _markdown_table,
    "emoji": _emoji,
    "spanish": _prose(SPANISH, typographic=True),
    "portuguese": _prose(PORTUGUESE, typographic=True),
    "italian": _prose(ITALIAN, typographic=True),
    "polish": _prose(POLISH),
    "czech": _prose(CZECH),
    "turkish": _prose(TURKISH),
    "hungarian": _prose(HUNGARIAN),
    "romanian": _prose(ROMANIAN),
    "indonesian": _prose(INDONESIAN),
    "vietnamese": _prose(VIETNAMESE),
    "hebrew": _prose(HEBREW, capitalize=False),
    "upper_case": _upper_case,
    "yaml": _yaml,
    "csv": _csv,
    "sql": _sql,
    "html": _html,
    "stack_trace": _stack_trace,
    "whitespace": _whitespace,
    "number_lists": _numbers,
    "digit_runs": _digits,
    "json_numbers": _json_numbers,
}


def corpus(kind: str, seed: int, half: int = 0, messages: int = 40) -> list[str]:
    """``messages`` generated messages of ``kind``, the same for the same arguments."""
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is not one of {sorted(KINDS)}")
    if half not in (0, 1):
        raise ValueError(f"half={half!r} must be 0 or 1 (which half of the word lists)")
    # A string seed is hashed by random's own (stable) rule, unlike hash() of a tuple.
    rng = random.Random(f"{kind}:{seed}:{half}")
    return [KINDS[kind](rng, half) for _ in range(messages)]
