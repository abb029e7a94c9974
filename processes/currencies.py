"""ISO 4217 currency codes in use, with their minor units (the decimals an amount shows by default).

Only codes of money people pay with; the precious metals, test codes and units without decimals
defined (XAU, XTS, XDR …) are left out, since a process amount is never in them.
"""

# Every active code has two decimals except these.
_DECIMALS = {
    0: "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF",
    3: "BHD IQD JOD KWD LYD OMR TND",
    4: "CLF UYW",
}
_TWO = (
    "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BOV BRL BSD BTN BWP BYN BZD "
    "CAD CDF CHE CHF CHW CNY COP COU CRC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS "
    "GIP GMD GTQ GYD HKD HNL HTG HUF IDR ILS INR IRR JMD KES KGS KHR KPW KYD KZT LAK LBP LKR LRD LSL "
    "MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD PAB PEN PGK "
    "PHP PKR PLN QAR RON RSD RUB SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS "
    "TMT TOP TRY TTD TWD TZS UAH USD USN UYU UZS VED VES WST XCD XCG YER ZAR ZMW ZWG"
)
DECIMALS: dict[str, int] = {code: 2 for code in _TWO.split()}
DECIMALS.update({code: places for places, codes in _DECIMALS.items() for code in codes.split()})


def decimals_of(code: str) -> int | None:
    """The currency's minor units (USD 2, JPY 0, BHD 3), or None when the code is not one in use."""
    return DECIMALS.get(code)
